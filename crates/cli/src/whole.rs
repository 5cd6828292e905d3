//! Files written whole or not at all: [`WholeFile`] writes beside its
//! path and renames the file over it once complete, so a write that fails
//! part-way (a full disk) leaves what was at the path before, and a
//! reader never meets half a file.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A file being written, to appear at its path on [`WholeFile::commit`].
/// Unbuffered: wrap it in a `BufWriter`.
pub struct WholeFile {
    path: PathBuf,
    /// Where it is written until then; `None` for a path that exists and
    /// is not a regular file of its own (a symbolic link, such as
    /// `/dev/stdout`, a pipe, a device), written in place: renaming over it
    /// would replace the link or the device with a file.
    partial: Option<PathBuf>,
    file: File,
}

impl WholeFile {
    /// Starts writing the file for `path`: as `<name>.partial` beside it,
    /// so that the rename stays on one file system.
    pub fn create(path: &Path) -> std::io::Result<WholeFile> {
        if std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_file()) {
            return Ok(WholeFile { path: path.to_owned(), partial: None, file: File::create(path)? });
        }
        let mut name = path.file_name().unwrap_or_default().to_owned();
        name.push(".partial");
        let partial = path.with_file_name(name);
        let file = File::create(&partial)?;
        Ok(WholeFile { path: path.to_owned(), partial: Some(partial), file })
    }

    /// Writes it to disk and puts it at its path; if that fails, the
    /// partial file goes and the path keeps what it had.
    pub fn commit(self) -> std::io::Result<()> {
        let Some(partial) = &self.partial else { return Ok(()) };
        let done = self.file.sync_all().and_then(|()| std::fs::rename(partial, &self.path));
        if done.is_err() {
            let _ = std::fs::remove_file(partial);
        }
        done
    }

    /// Gives up: the partial file goes, and the path keeps what it had.
    pub fn abandon(self) {
        if let Some(partial) = self.partial {
            drop(self.file);
            let _ = std::fs::remove_file(partial);
        }
    }
}

impl Write for WholeFile {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.file.write(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}
