//! The playground's controls, as edits of the scenario.
//!
//! The scenario is the single source of truth: every control reads its
//! value from it and changes it through one of these functions, which the
//! worker then runs. So what the page shows is always a scenario file that
//! `recon run` would run the same way.

use recon_abi::{ListMode, Mitigation};
use recon_scenario::{Millis, Scenario, Step, StepAction, Window};

/// A fault the user adds to the script at a chosen time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The component's instance dies (and comes back after its back-off).
    Crash,
    /// The component restarts now, reconnecting (and relisting).
    Restart,
}

/// Parses a duration typed in a control (`1.5s`, `200ms`, `2`), where a bare
/// number means seconds.
pub fn parse_time(text: &str) -> Result<Millis, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("a time is needed, e.g. 2s or 500ms".into());
    }
    let with_unit = if text.chars().all(|c| c.is_ascii_digit() || c == '.') { format!("{text}s") } else { text.into() };
    recon_scenario::parse_millis(&with_unit).map_err(|e| format!("{text:?}: {e}"))
}

/// Turns an API server's watch cache on or off.
pub fn set_cache_enabled(scenario: &mut Scenario, server: usize, enabled: bool) {
    if let Some(s) = scenario.api_servers.get_mut(server) {
        s.watch_cache.enabled = enabled;
    }
}

/// Sets how far an API server's watch cache lags behind the store.
pub fn set_cache_lag(scenario: &mut Scenario, server: usize, lag: Millis) {
    if let Some(s) = scenario.api_servers.get_mut(server) {
        s.watch_cache.lag = lag;
    }
}

/// Turns KEP-2340 consistent reads from the cache on or off.
pub fn set_consistent_reads(scenario: &mut Scenario, server: usize, on: bool) {
    if let Some(s) = scenario.api_servers.get_mut(server) {
        s.consistent_reads_from_cache = on;
    }
}

/// Adds a partition window to an API server: from `from` until `until`
/// (`None`: never heals).
pub fn add_partition(
    scenario: &mut Scenario,
    server: usize,
    from: Millis,
    until: Option<Millis>,
) -> Result<(), String> {
    if let Some(until) = until
        && until <= from
    {
        return Err(format!("a partition must heal after it starts ({} is not after {})", until.0, from.0));
    }
    if let Some(s) = scenario.api_servers.get_mut(server) {
        s.partitions.push(Window { from, until });
        s.partitions.sort_by_key(|w| w.from);
    }
    Ok(())
}

/// Removes an API server's `index`th partition window.
pub fn remove_partition(scenario: &mut Scenario, server: usize, index: usize) {
    if let Some(s) = scenario.api_servers.get_mut(server)
        && index < s.partitions.len()
    {
        s.partitions.remove(index);
    }
}

/// Points a component at another API server.
pub fn set_api_server(scenario: &mut Scenario, component: usize, api_server: &str) -> Result<(), String> {
    if !scenario.api_servers.iter().any(|s| s.name == api_server) {
        return Err(format!("there is no API server {api_server:?}"));
    }
    if let Some(c) = scenario.components.get_mut(component) {
        c.api_server = api_server.to_owned();
    }
    Ok(())
}

/// Sets a component's list mode; `None` leaves it to the controller's manifest.
pub fn set_list_mode(scenario: &mut Scenario, component: usize, mode: Option<ListMode>) {
    if let Some(c) = scenario.components.get_mut(component) {
        c.list_mode = mode;
    }
}

/// Switches a staleness mitigation on or off for a component.
pub fn set_mitigation(
    scenario: &mut Scenario,
    component: usize,
    mitigation: Mitigation,
    on: bool,
) -> Result<(), String> {
    let name = scenario.components.get(component).map(|c| c.name.clone()).ok_or("there is no such component")?;
    scenario.set_mitigation(&name, mitigation.name(), on)
}

/// A mitigation as its checkbox says it.
pub fn mitigation_label(mitigation: Mitigation) -> &'static str {
    match mitigation {
        Mitigation::StaleControllerConsistency => "wait for own writes per object (KEP-5647)",
        Mitigation::ReadYourOwnWrites => "read-your-own-writes client (controller-runtime)",
    }
}

/// Adds a crash or restart of `component` at `at` to the script, keeping
/// the script in time order (a step at the same time goes after the others).
pub fn add_fault(scenario: &mut Scenario, component: &str, fault: Fault, at: Millis) -> Result<(), String> {
    if !scenario.components.iter().any(|c| c.name == component) {
        return Err(format!("there is no component {component:?}"));
    }
    if at > scenario.duration {
        return Err(format!("{} ms is after the end of the run ({} ms)", at.0, scenario.duration.0));
    }
    let component = component.to_owned();
    let action = match fault {
        Fault::Crash => StepAction::Crash { component },
        Fault::Restart => StepAction::Restart { component, api_server: None },
    };
    let position = scenario.script.partition_point(|s| s.at <= at);
    scenario.script.insert(position, Step { at, action });
    Ok(())
}

/// Removes the script's `index`th step.
pub fn remove_step(scenario: &mut Scenario, index: usize) {
    if index < scenario.script.len() {
        scenario.script.remove(index);
    }
}

/// The list-mode choices, as the controls show them.
pub fn list_mode_name(mode: Option<ListMode>) -> &'static str {
    match mode {
        None => "manifest",
        Some(ListMode::Any) => "any",
        Some(ListMode::Quorum) => "quorum",
        Some(ListMode::Consistent) => "consistent",
    }
}

/// The inverse of [`list_mode_name`].
pub fn list_mode_from_name(name: &str) -> Option<ListMode> {
    match name {
        "any" => Some(ListMode::Any),
        "quorum" => Some(ListMode::Quorum),
        "consistent" => Some(ListMode::Consistent),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_scenario() -> Scenario {
        let library = recon_catalog::scenario(recon_catalog::DEFAULT_SCENARIO).unwrap();
        recon_scenario::parse("default.yaml", library.yaml).unwrap()
    }

    #[test]
    fn bare_numbers_are_seconds_and_units_are_kept() {
        assert_eq!(parse_time("2"), Ok(Millis(2_000)));
        assert_eq!(parse_time("1.5"), Ok(Millis(1_500)));
        assert_eq!(parse_time("250ms"), Ok(Millis(250)));
        assert!(parse_time("").is_err());
        assert!(parse_time("soon").unwrap_err().contains("soon"));
    }

    #[test]
    fn edits_survive_a_round_trip_through_yaml() {
        let mut scenario = default_scenario();
        set_cache_lag(&mut scenario, 0, Millis(300));
        set_consistent_reads(&mut scenario, 1, true);
        set_cache_enabled(&mut scenario, 0, false);
        add_partition(&mut scenario, 0, Millis(2_000), Some(Millis(4_000))).unwrap();
        set_list_mode(&mut scenario, 1, Some(ListMode::Quorum));
        add_fault(&mut scenario, "kubelet-node-2", Fault::Crash, Millis(7_000)).unwrap();
        let text = recon_scenario::to_yaml(&scenario);
        let back = recon_scenario::parse("edited.yaml", &text).unwrap();
        assert_eq!(back, scenario);
    }

    #[test]
    fn faults_keep_the_script_in_time_order() {
        let mut scenario = default_scenario();
        add_fault(&mut scenario, "kubelet-node-2", Fault::Restart, Millis(0)).unwrap();
        add_fault(&mut scenario, "kubelet-node-2", Fault::Crash, Millis(29_000)).unwrap();
        let times: Vec<u64> = scenario.script.iter().map(|s| s.at.0).collect();
        let mut sorted = times.clone();
        sorted.sort();
        assert_eq!(times, sorted);
        assert!(matches!(scenario.script.last().unwrap().action, StepAction::Crash { .. }));
    }

    #[test]
    fn impossible_edits_are_refused_with_a_reason() {
        let mut scenario = default_scenario();
        let before = scenario.clone();
        assert!(add_fault(&mut scenario, "nobody", Fault::Crash, Millis(1)).unwrap_err().contains("nobody"));
        assert!(add_fault(&mut scenario, "kubelet-node-1", Fault::Crash, Millis(10_000_000)).is_err());
        assert!(add_partition(&mut scenario, 0, Millis(5_000), Some(Millis(5_000))).is_err());
        assert!(set_api_server(&mut scenario, 0, "apiserver-9").is_err());
        assert_eq!(scenario, before);
    }

    #[test]
    fn a_mitigation_switches_on_once_and_off_again() {
        let mut scenario = default_scenario();
        set_mitigation(&mut scenario, 1, Mitigation::ReadYourOwnWrites, true).unwrap();
        set_mitigation(&mut scenario, 1, Mitigation::ReadYourOwnWrites, true).unwrap();
        assert_eq!(scenario.components[1].mitigations, [Mitigation::ReadYourOwnWrites]);
        set_mitigation(&mut scenario, 1, Mitigation::ReadYourOwnWrites, false).unwrap();
        assert!(scenario.components[1].mitigations.is_empty());
        assert!(set_mitigation(&mut scenario, 99, Mitigation::ReadYourOwnWrites, true).is_err());
    }

    #[test]
    fn list_mode_names_round_trip() {
        for mode in [None, Some(ListMode::Any), Some(ListMode::Quorum), Some(ListMode::Consistent)] {
            assert_eq!(list_mode_from_name(list_mode_name(mode)), mode);
        }
    }
}
