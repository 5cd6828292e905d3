//! [`Pieces`]: a writer that hands its bytes on in pieces of a fixed
//! size, so that a big export reaches the browser as it is written.

/// A writer that hands what is written on in pieces of `size` bytes
/// (the last one shorter), as it fills. It is both kinds of writer
/// (`io::Write` for `serde_json`, `fmt::Write` for formatting), and
/// neither kind of write fails.
pub struct Pieces<'a> {
    size: usize,
    buffer: Vec<u8>,
    hand_over: &'a mut dyn FnMut(&[u8]),
}

impl<'a> Pieces<'a> {
    /// Hands `hand_over` every `size` bytes written (`size` is not 0).
    pub fn new(size: usize, hand_over: &'a mut dyn FnMut(&[u8])) -> Self {
        debug_assert!(size > 0, "pieces of no bytes never fill");
        Pieces { size, buffer: Vec::with_capacity(size), hand_over }
    }

    /// Hands over what is left.
    pub fn finish(self) {
        if !self.buffer.is_empty() {
            (self.hand_over)(&self.buffer);
        }
    }

    fn put(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (now, later) = bytes.split_at(bytes.len().min(self.size - self.buffer.len()));
            self.buffer.extend_from_slice(now);
            if self.buffer.len() == self.size {
                (self.hand_over)(&self.buffer);
                self.buffer.clear();
            }
            bytes = later;
        }
    }
}

impl std::io::Write for Pieces<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.put(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl std::fmt::Write for Pieces<'_> {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.put(text.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Whatever the writes' sizes, the pieces are whole but for the last,
    /// and hold the bytes in order.
    #[test]
    fn pieces_are_full_but_the_last_and_keep_the_bytes_in_order() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
        for writes in [1, 3, 7, 10, 64, 999, 1000] {
            let mut pieces_seen: Vec<Vec<u8>> = Vec::new();
            let mut keep = |piece: &[u8]| pieces_seen.push(piece.to_vec());
            let mut pieces = Pieces::new(10, &mut keep);
            for chunk in bytes.chunks(writes) {
                assert_eq!(pieces.write(chunk).unwrap(), chunk.len());
            }
            pieces.finish();
            assert_eq!(pieces_seen.concat(), bytes, "writes of {writes}");
            assert!(pieces_seen.iter().all(|p| p.len() == 10), "writes of {writes}: 1,000 bytes in pieces of 10");
        }
        let mut seen = Vec::new();
        let mut count = |piece: &[u8]| seen.push(piece.len());
        let mut pieces = Pieces::new(10, &mut count);
        pieces.write_all(&bytes[..20]).unwrap();
        std::fmt::Write::write_str(&mut pieces, "héllo").unwrap();
        pieces.finish();
        assert_eq!(seen, [10, 10, 6], "text goes as its UTF-8 bytes");
        let mut none = 0;
        let mut counted = |_: &[u8]| none += 1;
        Pieces::new(10, &mut counted).finish();
        assert_eq!(none, 0, "nothing written, no piece");
    }
}
