//! Room on the disk before a long build: a cold `cargo xtask test` writes
//! about 15 GB into the target directory, and a disk that fills up halfway
//! fails ten minutes in with linker crashes that do not say why. This
//! stops at the start instead, saying how much is free and what is needed.

use std::path::Path;
use std::process::Command;

/// What a cold `cargo xtask test` leaves in an empty target directory,
/// rounded up (measured 2026-11-27: 15.5 GB, the debug build's test
/// binaries 8 GB of it, with the plugins, the playground and the wasm32
/// build of the engine).
const COLD_BYTES: u64 = 16 << 30;
/// What a warm run can add: test binaries relinked beside the old ones,
/// incremental caches of the workspace crates.
const WARM_BYTES: u64 = 3 << 30;

/// Stops with a message when the disk holding `target` has less room than
/// this build needs (cold when the tests' dependencies are not built yet:
/// the xtask itself is, so an empty `debug/` cannot tell). Where free
/// space cannot be read (no `df`), it says so and goes on.
pub fn ensure_room(target: &Path) -> Result<(), String> {
    let cold = !has_built(&target.join("debug").join("deps"), "libwasmtime-");
    let need = if cold { COLD_BYTES } else { WARM_BYTES };
    let Some(free) = free_bytes(target) else {
        eprintln!("xtask: could not read the free space under {} (`df -Pk`); going on", target.display());
        return Ok(());
    };
    if free >= need {
        return Ok(());
    }
    let kind = if cold { "a cold build (wasmtime not built yet)" } else { "a warm build" };
    Err(format!(
        "only {} free on the disk holding {}; {kind} needs about {}. Free some space (`cargo clean` here \
         removes this project's builds; old builds elsewhere count too) or point CARGO_TARGET_DIR at a \
         larger disk, then run again.",
        gigabytes(free),
        target.display(),
        gigabytes(need)
    ))
}

/// Whether `deps` holds a file whose name starts with `prefix`.
fn has_built(deps: &Path, prefix: &str) -> bool {
    std::fs::read_dir(deps).is_ok_and(|entries| {
        entries.flatten().any(|e| e.file_name().to_str().is_some_and(|name| name.starts_with(prefix)))
    })
}

/// Free bytes on the file system of `path` (or of its nearest existing
/// parent), from POSIX `df -Pk`.
fn free_bytes(path: &Path) -> Option<u64> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let out = Command::new("df").arg("-Pk").arg(existing).output().ok()?;
    if !out.status.success() {
        return None;
    }
    parse_df_available(&String::from_utf8_lossy(&out.stdout)).map(|kib| kib * 1024)
}

/// The "Available" column (KiB) of `df -Pk`'s one data line.
fn parse_df_available(out: &str) -> Option<u64> {
    out.lines().nth(1)?.split_whitespace().nth(3)?.parse().ok()
}

fn gigabytes(bytes: u64) -> String {
    format!("{:.1} GB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_available_column_of_posix_df() {
        let out = "Filesystem     1024-blocks      Used Available Capacity Mounted on\n\
                   /dev/vda         263174212  84516100  11530000      89% /\n";
        assert_eq!(parse_df_available(out), Some(11_530_000));
        assert_eq!(parse_df_available("Filesystem 1024-blocks Used Available\n"), None);
    }

    #[test]
    fn the_free_space_of_an_existing_directory_is_read() {
        // The nearest existing parent is asked, so a target directory that
        // does not exist yet still gets an answer.
        let missing = std::env::temp_dir().join("recon-xtask-no-such-dir").join("target");
        assert!(free_bytes(&missing).is_some_and(|b| b > 0));
    }
}
