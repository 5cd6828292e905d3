//! A directory of one test's own for the files it writes (recon-audit's
//! integration tests and, by path, recon-cli's).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Under Cargo's scratch directory for integration tests, not the system's
/// temporary directory (which CI machines share), and removed with all in
/// it when dropped: when the test ends, passed or failed (a panic unwinds
/// through it). Tests of a binary run at once on threads, so each has its
/// own, named after the binary, the test, the process and a count.
pub struct Scratch(PathBuf);

#[allow(dead_code, reason = "each test binary sharing this module uses what it needs of it")]
impl Scratch {
    /// An empty directory for the test running on this thread (libtest
    /// names each test's thread after the test).
    pub fn of_this_test() -> Scratch {
        static MADE: AtomicUsize = AtomicUsize::new(0);
        let test = std::thread::current().name().unwrap_or("main").replace("::", "-");
        let made = MADE.fetch_add(1, Ordering::Relaxed);
        let name = format!("{}-{test}-{}-{made}", env!("CARGO_CRATE_NAME"), std::process::id());
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        Scratch(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// A subdirectory, created.
    pub fn dir(&self, name: &str) -> PathBuf {
        let dir = self.0.join(name);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        dir
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
