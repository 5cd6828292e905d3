//! Wasm plugins on the command line: `--plugin COMPONENT=FILE` and `check-plugin`.

use std::path::Path;
use std::process::ExitCode;

use recon_abi::Manifest;
use recon_host::Limits;
use recon_prepare::{PluginBytes, ScenarioFile, Swap};

/// Reads `COMPONENT=FILE` arguments into swaps, checking the components
/// before reading the file; `recon_prepare` validates and compiles them.
/// `COMPONENT` may hold `*`s, to give the plugin to every component it
/// matches (`kubelet-*=my-kubelet.wasm`: one file, read and compiled once,
/// run as each). A later argument's plugin replaces an earlier one's for
/// the components both name. Errors are one line, ready to print.
pub fn load_swaps(file: &ScenarioFile, args: &[String]) -> Result<Vec<Swap>, String> {
    let mut swaps = Vec::new();
    for arg in args {
        let Some((component, path)) = arg.split_once('=') else {
            return Err(format!("--plugin {arg:?}: expected COMPONENT=FILE.wasm"));
        };
        let components = file.components_named(component).map_err(|why| format!("--plugin {arg:?}: {why}"))?;
        let path = Path::new(path);
        let bytes = std::fs::read(path).map_err(|e| format!("{}: cannot read the plugin: {e}", path.display()))?;
        let (file_name, plugin) = (plugin_name(path), PluginBytes::new(bytes));
        swaps.extend(components.into_iter().map(|component| Swap {
            component: component.name.clone(),
            file_name: file_name.clone(),
            plugin: plugin.clone(),
        }));
    }
    Ok(swaps)
}

/// The name a plugin goes by in messages: its file name.
fn plugin_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// `recon check-plugin FILE [--scenario S]`: validate, start, print the
/// manifest; under the limits the scenario sets, if one is given.
pub fn check(path: &Path, scenario: Option<&Path>) -> ExitCode {
    let limits = match scenario.map(scenario_limits).transpose() {
        Ok(limits) => limits.unwrap_or_default(),
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let name = plugin_name(path);
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{}: cannot read the plugin: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    match recon_host::check(&name, &bytes, &limits) {
        Ok(manifest) => {
            print_manifest(&name, &manifest);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rejected: {e}");
            ExitCode::from(2)
        }
    }
}

/// The plugin limits a scenario file sets.
fn scenario_limits(path: &Path) -> Result<Limits, String> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{file}: cannot read the scenario: {e}"))?;
    let scenario = recon_scenario::parse(&file, &text).map_err(|e| e.to_string())?;
    Ok(Limits::from(&scenario.limits.plugins))
}

fn print_manifest(file: &str, m: &Manifest) {
    say!("{file}: valid plugin");
    say!("controller  {}", m.name);
    say!("abi         version {}", m.abi_version);
    say!("list mode   {:?}", m.list_mode);
    say!("node agent  {}", if m.node_agent { "yes (may start and stop containers)" } else { "no" });
    for (i, w) in m.watches.iter().enumerate() {
        let mut line = format!("watch {i}     {}", w.kind);
        if !w.namespace.is_empty() {
            line += &format!(" in {}", w.namespace);
        }
        if !w.field_selector.is_empty() {
            line += &format!(" fields {}", w.field_selector);
        }
        if !w.label_selector.is_empty() {
            line += &format!(" labels {}", w.label_selector);
        }
        say!("{line}");
    }
    for w in &m.writes {
        let verbs: Vec<String> = w.verbs.iter().map(|v| format!("{v:?}")).collect();
        say!("writes      {}: {}", w.kind, verbs.join(", "));
    }
}
