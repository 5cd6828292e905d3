//! `recon run --trace`: where the trace goes, and writing it there with
//! its progress (or, without `--trace`, hashing it with its progress). A
//! trace at Kubernetes' published limits is gigabytes of JSON, so it is
//! encoded as it is written, never held whole.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use recon_trace::Trace;

use crate::progress::{Progress, Show};
use crate::stdout;
use crate::whole::WholeFile;

/// Where `--trace` writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceOut {
    /// A file, written beside its path and renamed over it once whole
    /// ([`WholeFile`]).
    File(PathBuf),
    /// Standard output itself, for `-` and for a path that names what
    /// standard output already writes to (`/dev/stdout`, or the file it is
    /// redirected to). Opening such a path again would start a second
    /// handle at the start of the file, truncating it, and the summary
    /// would be written over the trace; so the trace takes standard output,
    /// and the summary goes to standard error (see [`stdout::summary_to_stderr`]).
    Stdout,
}

impl TraceOut {
    /// Where `--trace PATH` writes.
    pub fn of(path: PathBuf) -> TraceOut {
        if path.as_os_str() == "-" || is_standard_output(&path) { TraceOut::Stdout } else { TraceOut::File(path) }
    }
}

/// Whether `path` is the file, pipe or terminal standard output writes to.
#[cfg(unix)]
fn is_standard_output(path: &Path) -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let Ok(ours) = std::io::stdout().as_fd().try_clone_to_owned().and_then(|fd| std::fs::File::from(fd).metadata())
    else {
        return false;
    };
    std::fs::metadata(path).is_ok_and(|theirs| (theirs.dev(), theirs.ino()) == (ours.dev(), ours.ino()))
}

#[cfg(not(unix))]
fn is_standard_output(_path: &Path) -> bool {
    false
}

/// Writes `trace` to `out` as JSON, encoding as it writes, with its
/// progress shown as `show` says, and returns its hash (taken as it is
/// written, so the summary need not encode it again). A file appears
/// whole or not at all ([`WholeFile`]), so a failed write (a full disk)
/// leaves what was at its path before. On standard output, a reader that
/// goes away (`| head`) ends the trace quietly, as it ends the summary.
pub fn write_trace(trace: &Trace, out: &TraceOut, show: Show) -> Result<String, String> {
    match out {
        TraceOut::File(path) => {
            let failed = |e: std::io::Error| format!("cannot write the trace to {}: {e}", path.display());
            let mut file = WholeFile::create(path).map_err(failed)?;
            match encode(trace, &mut file, show, Doing::Writing(&path.display().to_string())) {
                Ok(hash) => {
                    file.commit().map_err(failed)?;
                    Ok(hash)
                }
                Err(e) => {
                    file.abandon();
                    Err(failed(e))
                }
            }
        }
        TraceOut::Stdout => match encode(trace, &mut std::io::stdout().lock(), show, Doing::Writing("standard output"))
        {
            Ok(hash) => Ok(hash),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                stdout::closed();
                Ok(trace.hash())
            }
            Err(e) => Err(format!("cannot write the trace to standard output: {e}")),
        },
    }
}

/// The hash of `trace` without `--trace`: its JSON encoded only to be
/// hashed, with its progress shown as `show` says (at Kubernetes'
/// published limits that is gigabytes, and seconds after the run).
pub fn hash_trace(trace: &Trace, show: Show) -> String {
    match encode(trace, &mut std::io::sink(), show, Doing::Hashing) {
        Ok(hash) => hash,
        // Nothing is written anywhere, so nothing can fail; hash it plainly.
        Err(_) => trace.hash(),
    }
}

/// What encoding the trace is for, in the progress it shows.
#[derive(Clone, Copy)]
enum Doing<'a> {
    /// Writing it to the place named.
    Writing(&'a str),
    /// Hashing it alone.
    Hashing,
}

/// Encodes `trace` into `out` through a buffer, showing the bytes
/// written, and returns its hash.
fn encode(trace: &Trace, out: &mut dyn Write, show: Show, doing: Doing<'_>) -> std::io::Result<String> {
    // Counted under the buffer, so that the clock is read once a buffer.
    let counted = Counted { out, bytes: 0, progress: Progress::new(show), doing };
    let mut buffered = BufWriter::with_capacity(1 << 20, counted);
    let hash = trace.write_json_and_hash(&mut buffered)?;
    buffered.flush()?;
    let (Counted { bytes, mut progress, .. }, _) = buffered.into_parts();
    progress.finish(|seconds| match doing {
        Doing::Writing(shown) => format!("wrote the trace to {shown}: {} in {seconds:.1} s", megabytes(bytes)),
        Doing::Hashing => format!("hashed the trace: {} of JSON in {seconds:.1} s", megabytes(bytes)),
    });
    Ok(hash)
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// A writer that counts what is written through it and shows the count.
struct Counted<'a> {
    out: &'a mut dyn Write,
    bytes: u64,
    progress: Progress,
    doing: Doing<'a>,
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.bytes += n as u64;
        let (bytes, doing) = (self.bytes, self.doing);
        self.progress.tick(|seconds| match doing {
            Doing::Writing(_) => format!("writing the trace: {}, {seconds:.0} s", megabytes(bytes)),
            Doing::Hashing => format!("hashing the trace: {} of JSON, {seconds:.0} s", megabytes(bytes)),
        });
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `-` is standard output; any other path not standard output's own
    /// file is a file (tests run with standard output captured, a pipe).
    #[test]
    fn a_dash_is_standard_output_and_other_paths_are_files() {
        assert_eq!(TraceOut::of(PathBuf::from("-")), TraceOut::Stdout);
        let here = PathBuf::from("Cargo.toml");
        assert_eq!(TraceOut::of(here.clone()), TraceOut::File(here));
        let missing = PathBuf::from("no-such-dir/trace.json");
        assert_eq!(TraceOut::of(missing.clone()), TraceOut::File(missing));
    }
}
