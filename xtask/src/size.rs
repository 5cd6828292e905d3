//! What a visitor downloads: the built playground's files, gzipped, and
//! the budget `cargo xtask test` holds them to.
//!
//! One measurement serves three places: the budget check in `cargo xtask
//! test`, the table `cargo xtask size` writes into BENCHMARKS.md (between
//! the two `download-size` markers), and nothing else, so the number there
//! cannot drift from the one CI checks.

use std::io::Write;
use std::path::Path;

use flate2::Compression;
use flate2::write::GzEncoder;

/// The most a first visit may fetch, gzipped (HTML, JS glue, CSS and both
/// wasm files; not the downloadable plugins). Set at the size reached plus
/// about 2 %; lower it as the playground shrinks, never raise it to let a
/// change through without saying why in BENCHMARKS.md.
pub const BUDGET_GZIPPED_BYTES: u64 = 1_950_000;

/// Where BENCHMARKS.md's table goes.
const START_MARKER: &str = "<!-- download-size:start (cargo xtask size writes this table) -->";
const END_MARKER: &str = "<!-- download-size:end -->";

/// One file a visitor fetches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Its name without Trunk's content hash (`recon-web_bg.wasm`).
    pub name: String,
    /// Its size as served uncompressed.
    pub bytes: u64,
    /// Its size gzipped at the best level.
    pub gzipped: u64,
}

/// The files a first visit fetches from `dist` (the top level only; the
/// shipped plugins under `plugins/` are fetched on demand), sorted by name.
pub fn measure(dist: &Path) -> Result<Vec<Row>, String> {
    let entries = std::fs::read_dir(dist).map_err(|e| format!("cannot list {}: {e}", dist.display()))?;
    let mut rows = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(ext) = path.extension().and_then(|e| e.to_str()) else { continue };
        if !path.is_file() || !["wasm", "js", "css", "html"].contains(&ext) {
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        rows.push(Row { name: without_hash(file_name), bytes: bytes.len() as u64, gzipped: gzipped(&bytes) });
    }
    if rows.is_empty() {
        return Err(format!("{} holds no playground files: was it built?", dist.display()));
    }
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(rows)
}

/// Fails, naming every file's gzipped size, when the total is over `budget`.
pub fn check(rows: &[Row], budget: u64) -> Result<(), String> {
    let total: u64 = rows.iter().map(|r| r.gzipped).sum();
    if total <= budget {
        return Ok(());
    }
    let files: Vec<String> = rows.iter().map(|r| format!("  {} {} bytes gzipped", r.name, r.gzipped)).collect();
    Err(format!(
        "the playground's download is {total} bytes gzipped, {} over its budget of {budget} \
         (BUDGET_GZIPPED_BYTES in xtask/src/size.rs):\n{}\nmake it smaller, or raise the budget and say why in \
         BENCHMARKS.md",
        total - budget,
        files.join("\n")
    ))
}

/// The Markdown table of `rows`, with the total and the budget.
pub fn table(rows: &[Row], budget: u64) -> String {
    let mut out = String::from("| file | bytes | gzipped |\n|---|---:|---:|\n");
    for row in rows {
        out.push_str(&format!("| `{}` | {} | {} |\n", row.name, thousands(row.bytes), thousands(row.gzipped)));
    }
    let (bytes, gz) = rows.iter().fold((0, 0), |(b, g), r| (b + r.bytes, g + r.gzipped));
    out.push_str(&format!(
        "| **total** | {} | **{} ({:.2} MB)** |\n\nBudget (checked by `cargo xtask test`): {} bytes gzipped.\n",
        thousands(bytes),
        thousands(gz),
        gz as f64 / 1e6,
        thousands(budget)
    ));
    out
}

/// `text` with the table between the markers replaced by `table`.
pub fn replace_table(text: &str, table: &str) -> Result<String, String> {
    let (Some(start), Some(end)) = (text.find(START_MARKER), text.find(END_MARKER)) else {
        return Err(format!("BENCHMARKS.md lacks the markers {START_MARKER} and {END_MARKER}"));
    };
    if end < start {
        return Err("BENCHMARKS.md's download-size markers are out of order".into());
    }
    let body_start = start + START_MARKER.len();
    Ok(format!("{}\n\n{table}\n{}", &text[..body_start], &text[end..]))
}

/// `recon-web-983517126ac9581f_bg.wasm` → `recon-web_bg.wasm`: Trunk's
/// content hash changes with every build and says nothing here.
fn without_hash(name: &str) -> String {
    let (stem, rest) = match name.find(['_', '.']) {
        Some(i) => name.split_at(i),
        None => (name, ""),
    };
    match stem.rsplit_once('-') {
        Some((base, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            format!("{base}{rest}")
        }
        _ => name.to_owned(),
    }
}

fn gzipped(bytes: &[u8]) -> u64 {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    encoder.write_all(bytes).expect("writing to memory");
    encoder.finish().expect("writing to memory").len() as u64
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A built playground in a temporary directory: two wasm files (one
    /// barely compressible), glue, a stylesheet and a plugin that is not
    /// counted.
    fn fake_dist(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("recon-xtask-size-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("plugins")).unwrap();
        let mut noise = Vec::new();
        let mut x: u32 = 1;
        for _ in 0..20_000 {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            noise.push((x >> 24) as u8);
        }
        std::fs::write(dir.join("recon-web-983517126ac9581f_bg.wasm"), &noise).unwrap();
        std::fs::write(dir.join("recon-worker_bg.wasm"), vec![0u8; 50_000]).unwrap();
        std::fs::write(dir.join("recon-web-983517126ac9581f.js"), "export function f() {}\n".repeat(100)).unwrap();
        std::fs::write(dir.join("style-cac7c4dd834f2ffd.css"), "body { margin: 0 }\n").unwrap();
        std::fs::write(dir.join("index.html"), "<!doctype html>").unwrap();
        std::fs::write(dir.join("plugins/recon_plugin_kubelet.wasm"), &noise).unwrap();
        dir
    }

    #[test]
    fn the_check_fails_once_the_budget_is_below_the_real_size_and_names_every_file() {
        let dir = fake_dist("budget");
        let rows = measure(&dir).unwrap();
        let total: u64 = rows.iter().map(|r| r.gzipped).sum();
        assert!(check(&rows, total).is_ok());
        let error = check(&rows, total - 1).unwrap_err();
        assert!(error.contains(&format!("{total} bytes gzipped, 1 over its budget of {}", total - 1)), "{error}");
        for row in &rows {
            assert!(error.contains(&format!("{} {} bytes gzipped", row.name, row.gzipped)), "{error}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn only_what_a_first_visit_fetches_is_measured_under_names_without_the_content_hash() {
        let dir = fake_dist("names");
        let rows = measure(&dir).unwrap();
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["index.html", "recon-web.js", "recon-web_bg.wasm", "recon-worker_bg.wasm", "style.css"]);
        // Noise does not compress; zeros do.
        let by_name = |n: &str| rows.iter().find(|r| r.name == n).unwrap().clone();
        assert!(by_name("recon-web_bg.wasm").gzipped > 19_000);
        assert!(by_name("recon-worker_bg.wasm").gzipped < 1_000);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_benchmarks_table_is_replaced_between_its_markers_only() {
        let rows = vec![Row { name: "a.wasm".into(), bytes: 1_234_567, gzipped: 456_789 }];
        let text = format!("# B\n\nbefore\n{START_MARKER}\nold table\n{END_MARKER}\nafter\n");
        let new = replace_table(&text, &table(&rows, 500_000)).unwrap();
        assert!(new.starts_with("# B\n\nbefore\n"), "{new}");
        assert!(new.ends_with(&format!("{END_MARKER}\nafter\n")), "{new}");
        assert!(!new.contains("old table"), "{new}");
        assert!(new.contains("| `a.wasm` | 1,234,567 | 456,789 |"), "{new}");
        assert!(new.contains("| **total** | 1,234,567 | **456,789 (0.46 MB)** |"), "{new}");
        assert!(replace_table("no markers", "t").is_err());
    }
}
