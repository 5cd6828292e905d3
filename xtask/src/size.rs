//! What a visitor downloads: the built playground's files, gzipped, and
//! the budget `cargo xtask test` holds them to.
//!
//! One measurement serves both places: the budget check in `cargo xtask
//! test` and the table `cargo xtask size` writes into BENCHMARKS.md
//! (between the two `download-size` markers), so the number there cannot
//! drift from the one CI checks. A first visit (`index.html` and what it
//! names) and the whole download (the worker too) each have a budget.

use std::io::Write;
use std::path::Path;

use flate2::Compression;
use flate2::write::GzEncoder;

/// What the playground may weigh, gzipped. Set at the size reached plus
/// about 2 %; lower it as the playground shrinks, never raise it to let a
/// change through without saying why in BENCHMARKS.md.
pub const BUDGET: Budget = Budget { first_visit: 903_500, total: 2_635_000 };

/// The two limits the playground's download is held to, in bytes gzipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// What a first visit fetches: `index.html` and the files it names
    /// (the page's program, its glue and stylesheet). The default
    /// scenario's first run is drawn from a recording, so a first visit
    /// that changes nothing never starts the worker.
    pub first_visit: u64,
    /// Everything, the worker included (fetched when the page first needs
    /// a simulation); not the downloadable plugins.
    pub total: u64,
}

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
    /// Whether a first visit fetches it (`index.html` names it), rather
    /// than the worker when it starts.
    pub first_visit: bool,
}

/// The files the playground serves from `dist` (the top level only; the
/// shipped plugins under `plugins/` are fetched on demand), sorted by name,
/// each marked with whether a first visit fetches it.
pub fn measure(dist: &Path) -> Result<Vec<Row>, String> {
    let index = dist.join("index.html");
    let html = std::fs::read_to_string(&index)
        .map_err(|e| format!("cannot read {}: {e}; was the playground built?", index.display()))?;
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
        rows.push(Row {
            name: without_hash(file_name),
            bytes: bytes.len() as u64,
            gzipped: gzipped(&bytes),
            first_visit: file_name == "index.html" || html.contains(&format!("./{file_name}")),
        });
    }
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(rows)
}

/// The gzipped bytes a first visit fetches, and all of them.
pub fn totals(rows: &[Row]) -> (u64, u64) {
    let first_visit = rows.iter().filter(|r| r.first_visit).map(|r| r.gzipped).sum();
    (first_visit, rows.iter().map(|r| r.gzipped).sum())
}

/// Fails, naming every file's gzipped size, when a first visit or the
/// whole download is over its budget.
pub fn check(rows: &[Row], budget: Budget) -> Result<(), String> {
    let (first_visit, total) = totals(rows);
    let mut over = Vec::new();
    if first_visit > budget.first_visit {
        over.push(format!(
            "a first visit fetches {first_visit} bytes gzipped, {} over its budget of {} (BUDGET.first_visit)",
            first_visit - budget.first_visit,
            budget.first_visit
        ));
    }
    if total > budget.total {
        over.push(format!(
            "the whole playground is {total} bytes gzipped, {} over its budget of {} (BUDGET.total)",
            total - budget.total,
            budget.total
        ));
    }
    if over.is_empty() {
        return Ok(());
    }
    let files: Vec<String> = rows
        .iter()
        .map(|r| {
            format!("  {} {} bytes gzipped{}", r.name, r.gzipped, if r.first_visit { ", first visit" } else { "" })
        })
        .collect();
    Err(format!(
        "the playground's download is over budget (xtask/src/size.rs):\n{}\n{}\nmake it smaller, or raise the \
         budget and say why in BENCHMARKS.md",
        over.join("\n"),
        files.join("\n")
    ))
}

/// The Markdown table of `rows`, with both totals and the budget.
pub fn table(rows: &[Row], budget: Budget) -> String {
    let mut out = String::from("| file | first visit | bytes | gzipped |\n|---|---|---:|---:|\n");
    for row in rows {
        let when = if row.first_visit { "yes" } else { "when the worker starts" };
        out.push_str(&format!("| `{}` | {when} | {} | {} |\n", row.name, thousands(row.bytes), thousands(row.gzipped)));
    }
    let sum = |first_only: bool| {
        rows.iter().filter(|r| r.first_visit || !first_only).fold((0, 0), |(b, g), r| (b + r.bytes, g + r.gzipped))
    };
    for (label, (bytes, gz)) in [("**first visit**", sum(true)), ("**total**", sum(false))] {
        out.push_str(&format!(
            "| {label} | | {} | **{} ({:.2} MB)** |\n",
            thousands(bytes),
            thousands(gz),
            gz as f64 / 1e6
        ));
    }
    out.push_str(&format!(
        "\nBudget (checked by `cargo xtask test`): {} bytes gzipped for a first visit, {} in all.\n",
        thousands(budget.first_visit),
        thousands(budget.total)
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
/// content hash changes with every build and says nothing here. It is a
/// 64-bit number in hex without leading zeros, so sometimes shorter than 16.
fn without_hash(name: &str) -> String {
    let (stem, rest) = match name.find(['_', '.']) {
        Some(i) => name.split_at(i),
        None => (name, ""),
    };
    match stem.rsplit_once('-') {
        Some((base, hash)) if (8..=16).contains(&hash.len()) && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
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
        let html = "<script type=\"module\">import init from './recon-web-983517126ac9581f.js'; \
                    init('./recon-web-983517126ac9581f_bg.wasm')</script>\
                    <link rel=\"stylesheet\" href=\"./style-cac7c4dd834f2ffd.css\"/>";
        std::fs::write(dir.join("index.html"), html).unwrap();
        std::fs::write(dir.join("plugins/recon_plugin_kubelet.wasm"), &noise).unwrap();
        dir
    }

    #[test]
    fn the_check_fails_once_either_budget_is_below_the_real_size_and_names_every_file() {
        let dir = fake_dist("budget");
        let rows = measure(&dir).unwrap();
        let (first_visit, total) = totals(&rows);
        assert!(first_visit < total);
        assert!(check(&rows, Budget { first_visit, total }).is_ok());
        let error = check(&rows, Budget { first_visit: first_visit - 1, total }).unwrap_err();
        assert!(error.contains(&format!("a first visit fetches {first_visit} bytes gzipped, 1 over")), "{error}");
        assert!(!error.contains("whole playground"), "{error}");
        for row in &rows {
            assert!(error.contains(&format!("{} {} bytes gzipped", row.name, row.gzipped)), "{error}");
        }
        let error = check(&rows, Budget { first_visit, total: total - 1 }).unwrap_err();
        assert!(error.contains(&format!("the whole playground is {total} bytes gzipped, 1 over")), "{error}");
        assert!(!error.contains("a first visit fetches"), "{error}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn only_what_the_page_fetches_is_measured_under_names_without_the_content_hash() {
        let dir = fake_dist("names");
        let rows = measure(&dir).unwrap();
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["index.html", "recon-web.js", "recon-web_bg.wasm", "recon-worker_bg.wasm", "style.css"]);
        // Noise does not compress; zeros do.
        let by_name = |n: &str| rows.iter().find(|r| r.name == n).unwrap().clone();
        assert!(by_name("recon-web_bg.wasm").gzipped > 19_000);
        assert!(by_name("recon-worker_bg.wasm").gzipped < 1_000);
        // What index.html names is fetched on a first visit; the worker is not.
        let first: Vec<&str> = rows.iter().filter(|r| r.first_visit).map(|r| r.name.as_str()).collect();
        assert_eq!(first, ["index.html", "recon-web.js", "recon-web_bg.wasm", "style.css"]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_content_hash_is_dropped_whatever_its_leading_zeros_left_of_it() {
        assert_eq!(without_hash("recon-worker-983517126ac9581f_bg.wasm"), "recon-worker_bg.wasm");
        assert_eq!(without_hash("recon-worker-83517126ac9581f_bg.wasm"), "recon-worker_bg.wasm");
        assert_eq!(without_hash("recon-web-5d2c1b0a9e8f7d6c.js"), "recon-web.js");
        assert_eq!(without_hash("recon-worker_loader.js"), "recon-worker_loader.js");
        assert_eq!(without_hash("style.css"), "style.css");
    }

    #[test]
    fn the_benchmarks_table_is_replaced_between_its_markers_only() {
        let rows = vec![
            Row { name: "a.wasm".into(), bytes: 1_234_567, gzipped: 456_789, first_visit: true },
            Row { name: "b.wasm".into(), bytes: 1_000, gzipped: 100, first_visit: false },
        ];
        let text = format!("# B\n\nbefore\n{START_MARKER}\nold table\n{END_MARKER}\nafter\n");
        let new = replace_table(&text, &table(&rows, Budget { first_visit: 500_000, total: 600_000 })).unwrap();
        assert!(new.starts_with("# B\n\nbefore\n"), "{new}");
        assert!(new.ends_with(&format!("{END_MARKER}\nafter\n")), "{new}");
        assert!(!new.contains("old table"), "{new}");
        assert!(new.contains("| `a.wasm` | yes | 1,234,567 | 456,789 |"), "{new}");
        assert!(new.contains("| `b.wasm` | when the worker starts | 1,000 | 100 |"), "{new}");
        assert!(new.contains("| **first visit** | | 1,234,567 | **456,789 (0.46 MB)** |"), "{new}");
        assert!(new.contains("| **total** | | 1,235,567 | **456,889 (0.46 MB)** |"), "{new}");
        assert!(new.contains("500,000 bytes gzipped for a first visit, 600,000 in all"), "{new}");
        assert!(replace_table("no markers", "t").is_err());
    }
}
