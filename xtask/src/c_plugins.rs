//! Plugins written in C: every directory under `plugins/` holding a
//! `plugin.c`, built with clang (the one command its README gives) into
//! `recon_plugin_<directory>.wasm` beside the Rust plugins. Where no clang
//! can build for wasm32, each is skipped with one line saying what to
//! install, and a note `recon_plugin_<directory>.skipped` takes the place
//! of its `.wasm`, so that its test says why it did not run instead of
//! failing (`recon_tests::optional_wasm_plugin`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{run, tools};

/// The flags every C plugin is built with: freestanding wasm32 (no libc),
/// bulk memory so that the copies clang writes need no `memcpy`, and no
/// entry point (the exports are named in the source).
const CLANG_FLAGS: &[&str] =
    &["--target=wasm32-unknown-unknown", "-O2", "-nostdlib", "-mbulk-memory", "-Wall", "-Wl,--no-entry"];

/// Builds every C plugin under `plugins_dir` into `out_dir` with `clang`
/// ([`tools::find_clang`]'s answer), or, without one, leaves a note there
/// saying why it was skipped.
pub fn build_all(plugins_dir: &Path, out_dir: &Path, clang: &Result<PathBuf, String>) -> Result<(), String> {
    for source in sources(plugins_dir)? {
        let dir = source.parent().expect("a plugin.c is in a directory");
        let shown = dir.strip_prefix(plugins_dir.parent().unwrap_or(plugins_dir)).unwrap_or(dir).display();
        let stem = output_stem(dir);
        let (wasm, note) = (out_dir.join(format!("{stem}.wasm")), out_dir.join(format!("{stem}.skipped")));
        // Neither a stale module nor a stale note may outlive this build.
        for stale in [&wasm, &note] {
            let _ = std::fs::remove_file(stale);
        }
        match clang {
            Ok(clang) => run(Command::new(clang).args(CLANG_FLAGS).arg("-o").arg(&wasm).arg(&source))?,
            Err(why) => {
                let message = format!("{shown} is not built and its test is skipped: {why}; {}", tools::CLANG_HOW);
                eprintln!("xtask: {message}");
                std::fs::write(&note, format!("{message}\n"))
                    .map_err(|e| format!("cannot write {}: {e}", note.display()))?;
            }
        }
    }
    Ok(())
}

/// The `plugin.c` of each directory under `plugins_dir`, sorted.
fn sources(plugins_dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(plugins_dir).map_err(|e| format!("cannot read {}: {e}", plugins_dir.display()))?;
    let mut sources: Vec<PathBuf> =
        entries.flatten().map(|e| e.path().join("plugin.c")).filter(|source| source.is_file()).collect();
    sources.sort();
    Ok(sources)
}

/// `plugins/c-team-config` → `recon_plugin_c_team_config`, as the Rust
/// plugins' files are named after their packages.
fn output_stem(dir: &Path) -> String {
    let name = dir.file_name().map(|n| n.to_string_lossy().replace('-', "_")).unwrap_or_default();
    format!("recon_plugin_{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_c_plugin_is_named_after_its_directory_as_rust_plugins_are_after_their_package() {
        assert_eq!(output_stem(Path::new("/repo/plugins/c-team-config")), "recon_plugin_c_team_config");
    }

    #[test]
    fn without_clang_a_c_plugin_is_skipped_with_a_note_that_says_what_to_install() {
        let root = std::env::temp_dir().join(format!("recon-xtask-c-plugins-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (plugins, out) = (root.join("plugins"), root.join("out"));
        std::fs::create_dir_all(plugins.join("c-demo")).unwrap();
        std::fs::create_dir_all(plugins.join("rust-demo")).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(plugins.join("c-demo/plugin.c"), "int x;\n").unwrap();
        std::fs::write(out.join("recon_plugin_c_demo.wasm"), "stale").unwrap();
        let no_clang = tools::find_clang(&root.join("no-such-clang"), &root.join("scratch"));
        build_all(&plugins, &out, &no_clang).unwrap();
        assert!(!out.join("recon_plugin_c_demo.wasm").exists(), "the stale module is gone");
        assert!(!out.join("recon_plugin_rust_demo.skipped").exists(), "only directories with a plugin.c");
        let note = std::fs::read_to_string(out.join("recon_plugin_c_demo.skipped")).unwrap();
        assert!(note.starts_with("plugins/c-demo is not built and its test is skipped: "), "{note}");
        assert!(note.contains("no-such-clang was not found") && note.contains("apt-get install clang lld"), "{note}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
