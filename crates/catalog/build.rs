//! Embeds the scenario library (`scenarios/*.yaml` at the workspace root)
//! so that every front end (the CLI, the browser app, the tests) offers the
//! same scenarios without reading files at run time.

use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read the scenario library {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    // By name, so that `a` comes before `a-b` whatever follows the stem.
    files.sort_by_key(|path| path.file_stem().map(|s| s.to_os_string()));
    let mut code = String::from("&[\n");
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path.file_stem().and_then(|s| s.to_str()).expect("scenario file names are UTF-8");
        let path = path.canonicalize().expect("listed files exist");
        code += &format!("    LibraryScenario {{ name: {name:?}, yaml: include_str!({:?}) }},\n", path.display());
    }
    code += "]\n";
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("scenarios.rs");
    std::fs::write(out, code).expect("OUT_DIR is writable");
}
