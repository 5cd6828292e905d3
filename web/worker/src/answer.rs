//! An answer to the page as JSON bytes, encoded in pieces.
//!
//! A big run's trace is hundreds of megabytes of JSON. Encoded into one
//! `Vec`, its buffer doubles as it grows, and on wasm32 no allocation may
//! pass 2 GiB: a trace of more than 1 GiB of JSON ended the worker with
//! "capacity overflow" while it was being sent, after the whole run. So a
//! trace's entries go ahead of their answer, in messages of about
//! [`ENTRIES_BYTES`] ([`FromWorker::Entries`], which the page puts back
//! with `recon_web_protocol::Reassembly`), and every message goes into
//! pieces of [`PIECE_BYTES`] that never move, which the worker copies one
//! by one into the buffer it hands to the page. Neither side holds a
//! whole trace as JSON. A message longer than the page can take in
//! ([`MAX_ANSWER_BYTES`]) stops being encoded there and is answered with
//! why instead; with the entries sent ahead, that is a backstop.

use std::io::Write;

use recon_web_protocol::FromWorker;

/// The most bytes of JSON one message may take: the page copies them into
/// its own 32-bit memory, where no allocation may pass 2 GiB, and decodes
/// them beside the last run's trace. A trace's entries go ahead in
/// messages of about [`ENTRIES_BYTES`], so only an answer that is huge
/// without its entries could pass it.
pub const MAX_ANSWER_BYTES: usize = 3 << 29;

/// About how many bytes of JSON each [`FromWorker::Entries`] message
/// carries: a message ends with the first entry that reaches it.
pub const ENTRIES_BYTES: usize = 32 << 20;

/// The size of each piece of an encoded answer.
pub const PIECE_BYTES: usize = 64 << 20;

/// An answer's JSON, in pieces of at most [`PIECE_BYTES`].
#[derive(Debug, Default)]
pub struct Encoded {
    /// The pieces, in order; every one but the last is full.
    pub pieces: Vec<Vec<u8>>,
    /// Their bytes, together.
    pub len: usize,
}

/// Where the JSON goes while it is encoded: pieces, up to a limit.
struct Pieces {
    encoded: Encoded,
    limit: usize,
    piece_bytes: usize,
    /// A write would have passed the limit: why encoding stopped.
    overflowed: bool,
}

impl Pieces {
    /// Nothing written yet; writes past `limit` bytes in all fail.
    fn new(limit: usize, piece_bytes: usize) -> Pieces {
        Pieces { encoded: Encoded::default(), limit, piece_bytes, overflowed: false }
    }
}

impl Write for Pieces {
    fn write(&mut self, mut buf: &[u8]) -> std::io::Result<usize> {
        let written = buf.len();
        if self.encoded.len + buf.len() > self.limit {
            self.overflowed = true;
            return Err(std::io::Error::other("the answer is longer than the page can take in"));
        }
        while !buf.is_empty() {
            let piece_bytes = self.piece_bytes;
            let first = self.encoded.pieces.is_empty();
            let piece = match self.encoded.pieces.last_mut() {
                Some(piece) if piece.len() < piece_bytes => piece,
                _ => {
                    // The first piece grows as a `Vec` does (most answers
                    // are small: a progress report every 100 ms), doubling
                    // up to the piece size; the next ones are a piece each.
                    self.encoded.pieces.push(if first { Vec::new() } else { Vec::with_capacity(piece_bytes) });
                    self.encoded.pieces.last_mut().expect("just pushed")
                }
            };
            let n = buf.len().min(piece_bytes - piece.len());
            if piece.capacity() - piece.len() < n {
                // Doubling, as a `Vec` would, but never past a piece.
                let wanted = (2 * piece.capacity()).max(piece.len() + n).max(4_096).min(piece_bytes);
                piece.reserve_exact(wanted - piece.len());
            }
            piece.extend_from_slice(&buf[..n]);
            buf = &buf[n..];
        }
        self.encoded.len += written;
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `message` as the messages that carry it to the page, handed to `send`
/// one at a time in the order they are to be posted, each as JSON in
/// pieces of `piece_bytes`: first its trace's entries, if it has a trace
/// ([`FromWorker::Done`], [`FromWorker::Audited`]), in
/// [`FromWorker::Entries`] messages of about `entries_bytes` each; then
/// the message itself with the rest of its trace ([`encode`], with
/// `limit`, counting the entries sent ahead).
pub fn encode_all(
    mut message: FromWorker,
    limit: usize,
    piece_bytes: usize,
    entries_bytes: usize,
    mut send: impl FnMut(Encoded),
) {
    let id = message.id();
    let entries = match &mut message {
        FromWorker::Done { trace, .. } | FromWorker::Audited { trace, .. } => std::mem::take(&mut trace.entries),
        _ => recon_trace::Entries::new(),
    };
    let mut rest = entries.iter().peekable();
    while rest.peek().is_some() {
        // Written as serde writes `FromWorker::Entries` (the test decodes
        // it as one), a borrowed entry at a time.
        let mut pieces = Pieces::new(usize::MAX, piece_bytes);
        let written: std::io::Result<()> = (|| {
            write!(pieces, r#"{{"type":"entries","id":{id},"entries":["#)?;
            let mut first = true;
            while let Some(entry) = rest.next_if(|_| first || pieces.encoded.len < entries_bytes) {
                if !first {
                    pieces.write_all(b",")?;
                }
                serde_json::to_writer(&mut pieces, entry)?;
                first = false;
            }
            pieces.write_all(b"]}")
        })();
        written.expect("trace entries always encode: plain data, and no limit");
        send(pieces.encoded);
    }
    let ahead = entries.len();
    drop(entries);
    send(encode(&message, limit, piece_bytes, ahead));
}

/// `message` as JSON in pieces of `piece_bytes`, or, if it would take more
/// than `limit` bytes, the answer that says so in its place (encoded the
/// same way; it is short), counting `ahead` entries of its trace sent
/// before it.
pub fn encode(message: &FromWorker, limit: usize, piece_bytes: usize, ahead: usize) -> Encoded {
    let mut pieces = Pieces::new(limit, piece_bytes);
    match serde_json::to_writer(&mut pieces, message) {
        Ok(()) => pieces.encoded,
        Err(_) if pieces.overflowed => {
            let refusal = too_long(message, limit, ahead);
            let mut pieces = Pieces::new(usize::MAX, piece_bytes);
            serde_json::to_writer(&mut pieces, &refusal).expect("a failure always encodes");
            pieces.encoded
        }
        Err(e) => panic!("an answer did not encode (answers are plain data): {e}"),
    }
}

/// The answer in place of `message`, whose JSON passed `limit` bytes;
/// `ahead` of its trace's entries had been sent before it.
fn too_long(message: &FromWorker, limit: usize, ahead: usize) -> FromWorker {
    let mib = limit >> 20;
    let why = "the most the page can take in from its worker (both hold it in WebAssembly's 32-bit memory)";
    let error = match message {
        FromWorker::Done { trace, .. } => format!(
            "This run is too big for a browser tab: it ran to the end, but its answer, with a trace of {} \
             entries, takes more than {mib} MiB as JSON, {why}. Run it with the recon command line (recon run), \
             which has no such limit, or make it smaller (fewer nodes, pods or virtual seconds).",
            trace.entries.len() + ahead
        ),
        FromWorker::Audited { trace, .. } => format!(
            "These audit logs are too big for a browser tab: they were read, but their answer, with a trace \
             of {} entries, takes more than {mib} MiB as JSON, {why}. Read them with the recon command line \
             (recon audit), which has no such limit, or open fewer or shorter logs.",
            trace.entries.len() + ahead
        ),
        _ => format!("The answer is too big for a browser tab: it takes more than {mib} MiB as JSON, {why}."),
    };
    FromWorker::Failed { id: message.id(), component: None, error }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(entries: usize) -> FromWorker {
        let scenario = recon_scenario::parse(
            "t.yaml",
            "name: t\nduration: 1s\napiServers: [ { name: apiserver-1 } ]\nobjects:\n  - { apiVersion: v1, kind: ConfigMap, metadata: { name: c, namespace: default } }\n",
        )
        .unwrap();
        let mut sim = recon_sim::Sim::new(&scenario, Box::new(|_| None)).unwrap();
        sim.run_until(1_000);
        let mut trace = sim.into_trace();
        let first = trace.entries[0].clone();
        while trace.entries.len() < entries {
            trace.push(first.time_ms, first.lane, first.event.clone(), Vec::new());
        }
        FromWorker::Done { id: 7, hash: trace.hash(), wall_ms: Some(1.0), trace }
    }

    fn joined(encoded: &Encoded) -> Vec<u8> {
        encoded.pieces.concat()
    }

    // The pieces, joined, are the answer's JSON byte for byte, every piece
    // but the last is full, and none is over its size.
    #[test]
    fn an_answer_in_pieces_is_its_json() {
        let message = done(300);
        let whole = serde_json::to_vec(&message).unwrap();
        let encoded = encode(&message, usize::MAX, 1_000, 0);
        assert_eq!(joined(&encoded), whole);
        assert_eq!(encoded.len, whole.len());
        assert!(encoded.pieces.len() > 3, "{} pieces", encoded.pieces.len());
        let (last, full) = encoded.pieces.split_last().unwrap();
        assert!(full.iter().all(|p| p.len() == 1_000));
        assert!(!last.is_empty() && last.len() <= 1_000);
        assert!(encoded.pieces.iter().all(|p| p.capacity() == 1_000), "no piece holds more than its size");
        // A short answer takes a short buffer, not a piece's worth.
        let short = encode(&FromWorker::Ready, usize::MAX, 64 << 20, 0);
        assert_eq!(short.pieces[0].capacity(), 4_096);
    }

    // A trace's entries go ahead of their answer in messages of about the
    // size asked, each the JSON of `FromWorker::Entries`, and the page's
    // reassembly gives back the answer the worker made, byte for byte.
    #[test]
    fn a_trace_goes_ahead_of_its_answer_in_runs_of_entries() {
        let message = done(300);
        let whole = serde_json::to_vec(&message).unwrap();
        let entry_bytes = serde_json::to_vec(&done(1)).unwrap().len();
        let mut sent: Vec<Vec<u8>> = Vec::new();
        encode_all(message, usize::MAX, 1_000, 4_000, |encoded| {
            assert_eq!(encoded.len, encoded.pieces.iter().map(Vec::len).sum::<usize>());
            sent.push(joined(&encoded));
        });
        assert!(sent.len() > 3, "{} messages", sent.len());
        let mut reassembly = recon_web_protocol::Reassembly::default();
        let mut answers = Vec::new();
        for (i, bytes) in sent.iter().enumerate() {
            let message: FromWorker = serde_json::from_slice(bytes).unwrap();
            let last = i + 1 == sent.len();
            match &message {
                FromWorker::Entries { id, entries } => {
                    assert!(!last, "the answer comes last");
                    assert_eq!(*id, 7);
                    assert!(!entries.is_empty());
                    assert!(bytes.len() < 4_000 + entry_bytes, "a message of {} bytes", bytes.len());
                }
                FromWorker::Done { trace, .. } => {
                    assert!(last, "the answer comes after its entries");
                    assert!(trace.entries.is_empty(), "its entries went ahead");
                }
                other => panic!("unexpected {other:?}"),
            }
            answers.extend(reassembly.receive(message).unwrap());
        }
        let [answer] = &answers[..] else { panic!("one answer, not {}", answers.len()) };
        assert_eq!(serde_json::to_vec(answer).unwrap(), whole);
        // A message without a trace goes as it is, alone.
        let mut alone = Vec::new();
        encode_all(FromWorker::Ready, usize::MAX, 1_000, 4_000, |encoded| alone.push(joined(&encoded)));
        assert_eq!(alone, [serde_json::to_vec(&FromWorker::Ready).unwrap()]);
        // An answer still too long once its entries went ahead is refused,
        // counting them.
        let mut last = Vec::new();
        encode_all(done(300), 100, 1_000, 4_000, |encoded| last = joined(&encoded));
        let FromWorker::Failed { id, error, .. } = serde_json::from_slice(&last).unwrap() else { panic!("a refusal") };
        assert_eq!(id, 7);
        assert!(error.contains("with a trace of 300 entries"), "{error}");
    }

    // An answer longer than the page can take is replaced by one that
    // says so, for the same request, and encoding stops at the limit.
    #[test]
    fn an_answer_past_the_limit_is_replaced_by_why() {
        let message = done(300);
        let whole = serde_json::to_vec(&message).unwrap().len();
        let encoded = encode(&message, whole - 1, 1_000, 0);
        let answer: FromWorker = serde_json::from_slice(&joined(&encoded)).unwrap();
        let FromWorker::Failed { id, error, .. } = answer else { panic!("not a failure: {answer:?}") };
        assert_eq!(id, 7, "it answers the same request");
        assert!(
            error.starts_with(
                "This run is too big for a browser tab: it ran to the end, but its answer, with a trace of 300 entries"
            ),
            "{error}"
        );
        assert!(error.contains("recon run"), "{error}");
        // Audit logs are told what to do with audit logs.
        let FromWorker::Done { trace, hash, .. } = done(300) else { unreachable!() };
        let audited = FromWorker::Audited {
            id: 9,
            hash,
            wall_ms: 1.0,
            trace,
            explanations: Vec::new(),
            summary: String::new(),
            unjudged: Vec::new(),
            problems: String::new(),
        };
        let answer: FromWorker = serde_json::from_slice(&joined(&encode(&audited, 1_000, 1_000, 0))).unwrap();
        let FromWorker::Failed { id, error, .. } = answer else { panic!("not a failure: {answer:?}") };
        assert_eq!(id, 9);
        assert!(error.starts_with("These audit logs are too big for a browser tab"), "{error}");
        assert!(error.contains("recon audit"), "{error}");
        // Exactly at the limit it still goes through.
        assert_eq!(joined(&encode(&message, whole, 1_000, 0)), serde_json::to_vec(&message).unwrap());
    }
}
