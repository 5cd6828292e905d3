//! Wasm plugins on the command line: `--plugin COMPONENT=FILE` and `check-plugin`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use recon_abi::Manifest;
use recon_host::{CompiledPlugin, Engine, Limits, Module};
use recon_scenario::Scenario;
use recon_sim::Instantiate;

/// Loads `COMPONENT=FILE` arguments: each file is validated, instrumented
/// under the scenario's `limits.plugins` and compiled once. Errors are one line, ready to print.
pub fn load_swaps(scenario: &Scenario, args: &[String]) -> Result<BTreeMap<String, CompiledPlugin>, String> {
    let mut swaps = BTreeMap::new();
    if args.is_empty() {
        return Ok(swaps);
    }
    let engine = Engine::new().map_err(|e| e.to_string())?;
    let limits = Limits::from(&scenario.limits.plugins);
    for arg in args {
        let Some((component, file)) = arg.split_once('=') else {
            return Err(format!("--plugin {arg:?}: expected COMPONENT=FILE.wasm"));
        };
        if !scenario.components.iter().any(|c| c.name == component) {
            let names: Vec<&str> = scenario.components.iter().map(|c| c.name.as_str()).collect();
            return Err(format!(
                "--plugin {arg:?}: the scenario has no component {component:?} (it has: {})",
                names.join(", ")
            ));
        }
        let compiled = load(&engine, Path::new(file), &limits)?;
        swaps.insert(component.to_string(), compiled);
    }
    Ok(swaps)
}

/// The name a plugin goes by in messages: its file name.
fn plugin_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

fn load(engine: &Engine, path: &Path, limits: &Limits) -> Result<CompiledPlugin, String> {
    let name = plugin_name(path);
    let bytes = std::fs::read(path).map_err(|e| format!("{}: cannot read the plugin: {e}", path.display()))?;
    let module = Module::load(&name, &bytes, limits).map_err(|e| e.to_string())?;
    engine.compile(&module).map_err(|e| e.to_string())
}

/// Instantiates swapped components from their plugin and the rest from the
/// built-in catalog by controller name. A plugin that cannot be instantiated
/// starts as an instance whose every call crashes with the reason, which the
/// simulator reports and backs off from.
pub fn instantiate_with(swaps: BTreeMap<String, CompiledPlugin>) -> Instantiate {
    Box::new(move |component| match swaps.get(&component.name) {
        Some(plugin) => Some(plugin.start()),
        None => recon_catalog::instantiate(&component.controller),
    })
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
