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
        WholeFile::commit_all(vec![self]).map_err(|(_, e)| e)
    }

    /// Commits several files as nearly together as files allow: each is
    /// written to disk first, and only once all are is each put at its
    /// path, so a write that fails (a full disk) leaves every path as it
    /// was; what is left to fail after that is a rename. On failure the
    /// files not yet in place are given up, and the error names the path.
    /// A file written in place needs neither.
    pub fn commit_all(files: Vec<WholeFile>) -> Result<(), (PathBuf, std::io::Error)> {
        let mut synced = Vec::with_capacity(files.len());
        let mut files = files.into_iter();
        while let Some(file) = files.next() {
            // One written in place (a link, a pipe) is where it goes already.
            if file.partial.is_none() {
                continue;
            }
            if let Err(e) = file.file.sync_all() {
                let path = file.path.clone();
                synced.into_iter().chain(std::iter::once(file)).chain(files).for_each(WholeFile::abandon);
                return Err((path, e));
            }
            synced.push(file);
        }
        let mut synced = synced.into_iter();
        while let Some(file) = synced.next() {
            let partial = file.partial.as_ref().expect("only files written beside their paths are kept");
            if let Err(e) = std::fs::rename(partial, &file.path) {
                let path = file.path.clone();
                std::iter::once(file).chain(synced).for_each(WholeFile::abandon);
                return Err((path, e));
            }
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory of the test's own.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("recon-whole-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    fn written(path: &Path, text: &str) -> WholeFile {
        let mut file = WholeFile::create(path).unwrap();
        file.write_all(text.as_bytes()).unwrap();
        file
    }

    #[test]
    fn files_committed_together_replace_what_was_there_and_leave_nothing_beside() {
        let dir = scratch("together");
        std::fs::write(dir.join("a.jsonl"), "old a").unwrap();
        let files = vec![written(&dir.join("a.jsonl"), "new a"), written(&dir.join("b.jsonl"), "new b")];
        assert_eq!(names(&dir), ["a.jsonl", "a.jsonl.partial", "b.jsonl.partial"]);
        WholeFile::commit_all(files).unwrap();
        assert_eq!(names(&dir), ["a.jsonl", "b.jsonl"]);
        assert_eq!(std::fs::read_to_string(dir.join("a.jsonl")).unwrap(), "new a");
        assert_eq!(std::fs::read_to_string(dir.join("b.jsonl")).unwrap(), "new b");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A file that cannot be put at its path (here a directory has taken
    /// it) is named in the error, and no partial file is left of it or of
    /// those after it.
    #[test]
    fn a_file_that_cannot_be_put_in_place_is_named_and_leaves_no_partial_files() {
        let dir = scratch("in-the-way");
        std::fs::write(dir.join("c.jsonl"), "old c").unwrap();
        let files = vec![
            written(&dir.join("a.jsonl"), "new a"),
            written(&dir.join("b.jsonl"), "new b"),
            written(&dir.join("c.jsonl"), "new c"),
        ];
        // Made after the files: no file can be renamed over a directory.
        std::fs::create_dir(dir.join("b.jsonl")).unwrap();
        let (path, _) = WholeFile::commit_all(files).unwrap_err();
        assert_eq!(path, dir.join("b.jsonl"));
        assert_eq!(names(&dir), ["a.jsonl", "b.jsonl", "c.jsonl"]);
        assert_eq!(std::fs::read_to_string(dir.join("c.jsonl")).unwrap(), "old c");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
