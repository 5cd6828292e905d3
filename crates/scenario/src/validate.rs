//! The semantic pass over a deserialized scenario: normalisation, then
//! validation that collects every problem with the path of its YAML node.

use std::collections::{BTreeMap, BTreeSet};

use recon_abi::Object;

use crate::kinds::{CRD_KIND, Kinds, crd_problems};
use crate::{Diagnostic, Scenario, SourceMap, StepAction};

/// Fills in what the file may leave out: namespaced objects without a
/// namespace get `default`, in `objects` and in object steps alike, so the
/// simulator and the duplicate check below see the key the API server would.
pub(crate) fn normalize(scenario: &mut Scenario) {
    let kinds = scenario.kinds();
    let default_namespace = |kind: &str, namespace: &mut String| {
        if namespace.is_empty() && !kind.is_empty() && !kinds.is_cluster_scoped(kind) {
            *namespace = "default".to_owned();
        }
    };
    for object in &mut scenario.objects {
        default_namespace(&object.kind, &mut object.metadata.namespace);
    }
    for step in &mut scenario.script {
        match &mut step.action {
            StepAction::Create { object, .. } | StepAction::Apply { object, .. } => {
                default_namespace(&object.kind, &mut object.metadata.namespace);
            }
            StepAction::Delete { target, .. } | StepAction::Scale { target, .. } => {
                default_namespace(&target.kind, &mut target.namespace);
            }
            _ => {}
        }
    }
}

/// Every semantic problem of `scenario`, located through `source`.
pub(crate) fn validate(scenario: &Scenario, source: &SourceMap) -> Vec<Diagnostic> {
    let mut v = Validator { source, kinds: scenario.kinds(), found: Vec::new() };
    let names = Defined {
        servers: v.names("API server", "apiServers", scenario.api_servers.iter().map(|a| a.name.as_str())),
        nodes: v.names("node", "nodes", scenario.nodes.iter().map(|n| n.name.as_str())),
        components: v.names("component", "components", scenario.components.iter().map(|c| c.name.as_str())),
    };
    v.cluster(scenario, &names);
    v.objects(scenario);
    v.script(scenario, &names);
    v.checks(scenario);
    if scenario.lesson.contains('\n') {
        v.report(
            "lesson".into(),
            "the lesson is one line: say it in a sentence, and leave the story to the description".into(),
        );
    }
    v.fixes(scenario, &names);
    v.ordering(scenario, &names);
    v.plugin_limits(scenario);
    v.found
}

struct Validator<'a> {
    source: &'a SourceMap,
    /// The kinds the scenario's API serves (built-in and declared).
    kinds: Kinds,
    found: Vec<Diagnostic>,
}

/// The names a scenario defines, which other fields refer to.
struct Defined<'s> {
    servers: Names<'s>,
    nodes: Names<'s>,
    components: Names<'s>,
}

/// The names defined in one list (API servers, nodes or components).
struct Names<'s> {
    /// What a name in this list denotes, for messages: `API server`.
    what: &'static str,
    names: BTreeSet<&'s str>,
}

impl<'a> Validator<'a> {
    fn report(&mut self, path: String, message: String) {
        self.found.push(Diagnostic::new(self.source, path, message));
    }

    /// "first at line N" for messages about a second definition.
    fn line_of(&self, path: &str) -> String {
        self.source.locate(path).map_or_else(|| path.to_owned(), |(line, _)| format!("line {line}"))
    }

    /// Collects the names of one list, reporting empty and repeated ones.
    fn names<'s>(&mut self, what: &'static str, list: &str, names: impl Iterator<Item = &'s str>) -> Names<'s> {
        let mut first: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, name) in names.enumerate() {
            let path = format!("{list}[{i}].name");
            if name.is_empty() {
                self.report(path, format!("the {what} has an empty name"));
            } else if let Some(&j) = first.get(name) {
                let at = self.line_of(&format!("{list}[{j}].name"));
                self.report(path, format!("{what} `{name}` is defined twice (first at {at})"));
            } else {
                first.insert(name, i);
            }
        }
        Names { what, names: first.into_keys().collect() }
    }

    /// Reports `name` at `path` unless it is one of `known`.
    fn reference(&mut self, path: String, name: &str, known: &Names<'_>) {
        if known.names.contains(name) {
            return;
        }
        let what = known.what;
        let defined = if known.names.is_empty() {
            format!("no {what} is defined")
        } else {
            let list: Vec<&str> = known.names.iter().copied().collect();
            format!("defined: {}", list.join(", "))
        };
        self.report(path, format!("unknown {what} `{name}` ({defined})"));
    }

    fn cluster(&mut self, s: &Scenario, defined: &Defined<'_>) {
        let latency = s.network.latency;
        if latency.min.0 == 0 {
            // Messages must take time: with zero latency a controller that
            // answers every reply with a new request would stop the clock.
            self.report("network.latency.min".into(), "latency min must be at least 1ms".into());
        }
        if latency.min > latency.max {
            self.report(
                "network.latency.max".into(),
                format!("latency max {} is below min {}", latency.max, latency.min),
            );
        }
        if s.api_servers.is_empty() {
            self.report("apiServers".into(), "a scenario needs at least one API server".into());
        }
        for (i, server) in s.api_servers.iter().enumerate() {
            self.watch_cache(&format!("apiServers[{i}].watchCache"), &server.watch_cache);
            for (j, window) in server.partitions.iter().enumerate() {
                if let Some(until) = window.until.filter(|&until| until <= window.from) {
                    self.report(
                        format!("apiServers[{i}].partitions[{j}].until"),
                        format!("partition ends at {until}, which is not after it starts at {}", window.from),
                    );
                }
            }
        }
        for (i, component) in s.components.iter().enumerate() {
            self.reference(format!("components[{i}].apiServer"), &component.api_server, &defined.servers);
            for (j, name) in component.failover.iter().enumerate() {
                self.reference(format!("components[{i}].failover[{j}]"), name, &defined.servers);
            }
            if let Some(node) = &component.node {
                self.reference(format!("components[{i}].node"), node, &defined.nodes);
            }
            if component.start_at > s.duration {
                self.report(
                    format!("components[{i}].startAt"),
                    format!("starts at {}, after the end of the run at {}", component.start_at, s.duration),
                );
            }
            if let Some(election) = &component.leader_election {
                self.leader_election(&format!("components[{i}].leaderElection"), election);
            }
        }
    }

    /// Bookmarks need time between them and the event window room for one
    /// event, or a watch could never resume.
    fn watch_cache(&mut self, path: &str, cache: &crate::WatchCache) {
        if cache.bookmark_interval.0 == 0 {
            self.report(format!("{path}.bookmarkInterval"), "bookmarkInterval must be at least 1ms".into());
        }
        if cache.window_events == 0 {
            self.report(format!("{path}.windowEvents"), "windowEvents must be at least 1".into());
        }
        if cache.window_duration.is_some_and(|d| d.0 == 0) {
            self.report(format!("{path}.windowDuration"), "windowDuration must be at least 1ms".into());
        }
    }

    /// The timings must leave room for client-go's order of events: retry,
    /// then give up renewing, then let the Lease expire for others.
    fn leader_election(&mut self, path: &str, e: &crate::LeaderElection) {
        if e.lease.is_empty() {
            self.report(format!("{path}.lease"), "the Lease needs a name".into());
        }
        if e.retry_period.0 == 0 {
            self.report(format!("{path}.retryPeriod"), "retryPeriod must be at least 1ms".into());
        }
        if e.renew_deadline <= e.retry_period {
            self.report(
                format!("{path}.renewDeadline"),
                format!("renewDeadline {} must be longer than retryPeriod {}", e.renew_deadline, e.retry_period),
            );
        }
        if e.lease_duration <= e.renew_deadline {
            self.report(
                format!("{path}.leaseDuration"),
                format!("leaseDuration {} must be longer than renewDeadline {}", e.lease_duration, e.renew_deadline),
            );
        }
    }

    /// Initial objects are stored at the start, so two with one key cannot
    /// both be. Every entry of `nodes` stores a Node object too.
    fn objects(&mut self, s: &Scenario) {
        let mut first: BTreeMap<(&str, &str, &str), String> = s
            .nodes
            .iter()
            .enumerate()
            .map(|(j, node)| (("Node", "", node.name.as_str()), format!("nodes[{j}].name")))
            .collect();
        for (i, object) in s.objects.iter().enumerate() {
            let path = format!("objects[{i}]");
            self.object(&path, object, false);
            if object.kind == CRD_KIND {
                for (at, message) in crd_problems(object) {
                    self.report(format!("{path}.{at}"), message);
                }
            }
            let meta = &object.metadata;
            if meta.name.is_empty() {
                continue;
            }
            let key = (object.kind.as_str(), meta.namespace.as_str(), meta.name.as_str());
            if let Some(earlier) = first.get(&key) {
                let at = self.line_of(earlier);
                self.report(
                    format!("{path}.metadata.name"),
                    format!("{} is defined twice (first at {at})", object.key()),
                );
            } else {
                first.insert(key, format!("{path}.metadata.name"));
            }
        }
    }

    /// What every manifest needs; `apply` also needs a fixed name, because
    /// it finds the object to update by name.
    fn object(&mut self, path: &str, object: &Object, needs_name: bool) {
        if object.api_version.is_empty() {
            self.report(format!("{path}.apiVersion"), "the object has an empty apiVersion".into());
        }
        if object.kind.is_empty() {
            self.report(format!("{path}.kind"), "the object has an empty kind".into());
        } else {
            self.kind(&format!("{path}.kind"), &object.kind);
        }
        if let Some(allowed) = self.kinds.top_level_fields(&object.kind) {
            for field in object.other.keys().filter(|field| !allowed.contains(&field.as_str())) {
                let own = match allowed {
                    [] => "spec and status".to_owned(),
                    [fields @ .., last] => format!("{} and {last}", fields.join(", ")),
                };
                let at = format!("{path}.{field}");
                let (line, column) = self.source.locate_key(&at).unwrap_or((1, 1));
                self.found.push(Diagnostic {
                    line,
                    column,
                    path: at,
                    message: format!(
                        "unknown field `{field}`: besides apiVersion, kind and metadata, a {} has {own}",
                        object.kind
                    ),
                });
            }
        }
        let meta = &object.metadata;
        if needs_name && meta.name.is_empty() {
            self.report(
                format!("{path}.metadata"),
                "apply needs metadata.name (generateName only works with create)".into(),
            );
        } else if meta.name.is_empty() && meta.generate_name.is_empty() {
            self.report(format!("{path}.metadata"), "the object needs metadata.name or metadata.generateName".into());
        }
        if !meta.namespace.is_empty() && self.kinds.is_cluster_scoped(&object.kind) {
            self.report(
                format!("{path}.metadata.namespace"),
                format!("{} objects are cluster-scoped and have no namespace", object.kind),
            );
        }
    }

    /// Reports a kind the API does not serve.
    fn kind(&mut self, path: &str, kind: &str) {
        if self.kinds.get(kind).is_some() {
            return;
        }
        let declared: Vec<String> = self.kinds.custom().map(|k| k.kind.clone()).collect();
        let declared = if declared.is_empty() {
            "the scenario declares no CustomResourceDefinition".to_owned()
        } else {
            format!("its CustomResourceDefinitions declare {}", declared.join(", "))
        };
        self.report(
            path.to_owned(),
            format!("unknown kind {kind}: it is not built in, and {declared}; declare it with a CustomResourceDefinition among the objects"),
        );
    }

    fn script(&mut self, s: &Scenario, defined: &Defined<'_>) {
        let Defined { servers, nodes, components } = defined;
        let mut latest = None;
        for (i, step) in s.script.iter().enumerate() {
            let path = format!("script[{i}]");
            if let Some(before) = latest.filter(|&before| step.at < before) {
                self.report(
                    format!("{path}.at"),
                    format!("time goes backwards: step at {} comes after a step at {before}", step.at),
                );
            }
            latest = latest.max(Some(step.at));
            if step.at > s.duration {
                self.report(
                    format!("{path}.at"),
                    format!("step at {} is after the end of the run at {}", step.at, s.duration),
                );
            }
            let via = match &step.action {
                StepAction::Create { object, via } | StepAction::Apply { object, via } => {
                    let verb = if matches!(step.action, StepAction::Create { .. }) { "create" } else { "apply" };
                    self.object(&format!("{path}.{verb}"), object, verb == "apply");
                    if object.kind == CRD_KIND {
                        // The API's kinds are fixed for the run.
                        self.report(
                            format!("{path}.{verb}.kind"),
                            "declare CustomResourceDefinitions among the scenario's objects, not in its script".into(),
                        );
                    }
                    via
                }
                StepAction::Delete { via, target, .. } => {
                    self.kind(&format!("{path}.delete.kind"), &target.kind);
                    via
                }
                StepAction::Scale { via, target, .. } => {
                    self.kind(&format!("{path}.scale.kind"), &target.kind);
                    via
                }
                StepAction::Cordon { node } => {
                    self.reference(format!("{path}.cordon.node"), node, nodes);
                    &None
                }
                StepAction::Uncordon { node } => {
                    self.reference(format!("{path}.uncordon.node"), node, nodes);
                    &None
                }
                StepAction::Crash { component } => {
                    self.reference(format!("{path}.crash.component"), component, components);
                    &None
                }
                StepAction::Restart { component, api_server } => {
                    self.reference(format!("{path}.restart.component"), component, components);
                    if let Some(server) = api_server {
                        self.reference(format!("{path}.restart.apiServer"), server, servers);
                    }
                    &None
                }
                StepAction::Disconnect { component } => {
                    self.reference(format!("{path}.disconnect.component"), component, components);
                    &None
                }
                StepAction::Compact { .. } => &None,
            };
            if let Some(server) = via {
                self.reference(format!("{path}.via"), server, servers);
            }
        }
    }

    fn checks(&mut self, s: &Scenario) {
        self.expectation("expect", &s.expect, s);
        let judged = s.checks.enabled.contains(&crate::Check::HistoryPolicy);
        if judged && s.checks.policies.is_empty() {
            self.report(
                "checks.enabled".into(),
                "the historyPolicy check judges the rules in checks.policies, and there are none".into(),
            );
        }
        if !judged && !s.checks.policies.is_empty() {
            self.report(
                "checks.policies".into(),
                "checks.policies are judged by the historyPolicy check, which is not in checks.enabled".into(),
            );
        }
        let judges_aggregates = s.checks.enabled.contains(&crate::Check::DroppedMember);
        if judges_aggregates && s.checks.aggregates.is_empty() {
            self.report(
                "checks.enabled".into(),
                "the droppedMember check judges the objects in checks.aggregates, and there are none".into(),
            );
        }
        if !judges_aggregates && !s.checks.aggregates.is_empty() {
            self.report(
                "checks.aggregates".into(),
                "checks.aggregates are judged by the droppedMember check, which is not in checks.enabled".into(),
            );
        }
        for (i, aggregate) in s.checks.aggregates.iter().enumerate() {
            if aggregate.into.field.split('.').any(str::is_empty) {
                self.report(
                    format!("checks.aggregates[{i}].into.field"),
                    format!("`{}` is not a dotted path to a field, like subjects", aggregate.into.field),
                );
            }
            if aggregate.member.is_empty() {
                self.report(
                    format!("checks.aggregates[{i}].member"),
                    "a member needs at least one field, e.g. name: \"{name}-serviceaccount\"".into(),
                );
            }
        }
        for (i, policy) in s.checks.policies.iter().enumerate() {
            for (at, field) in [("field", &policy.field), ("drives.field", &policy.drives.field)] {
                if field.split('.').any(str::is_empty) {
                    self.report(
                        format!("checks.policies[{i}].{at}"),
                        format!("`{field}` is not a dotted path to a field, like spec.replicas"),
                    );
                }
            }
        }
    }

    /// An expected violation needs its check enabled.
    fn expectation(&mut self, path: &str, expect: &crate::Expectation, s: &Scenario) {
        for (i, check) in expect.violations.iter().enumerate() {
            if !s.checks.enabled.contains(check) {
                self.report(
                    format!("{path}.violations[{i}]"),
                    format!("expects a {check} violation, but the {check} check is not in checks.enabled"),
                );
            }
        }
    }

    /// Each fix has a name to be turned on by, a sentence to be shown
    /// with, something to change in a component the scenario has, and an
    /// outcome its checks can show.
    fn fixes(&mut self, s: &Scenario, defined: &Defined<'_>) {
        self.names("fix", "fixes", s.fixes.iter().map(|f| f.name.as_str()));
        for (i, fix) in s.fixes.iter().enumerate() {
            let path = format!("fixes[{i}]");
            if fix.summary.trim().is_empty() {
                self.report(format!("{path}.summary"), format!("fix `{}` needs a one-sentence summary", fix.name));
            }
            if fix.components.is_empty() {
                self.report(
                    format!("{path}.components"),
                    format!("fix `{}` changes nothing: name at least one component and what changes in it", fix.name),
                );
            }
            for (j, change) in fix.components.iter().enumerate() {
                let at = format!("{path}.components[{j}]");
                self.reference(format!("{at}.name"), &change.name, &defined.components);
                if change.controller.is_none()
                    && change.list_mode.is_none()
                    && change.params.is_empty()
                    && change.mitigations.is_empty()
                {
                    self.report(
                        at,
                        format!("this change of `{}` sets no controller, listMode, params or mitigations", change.name),
                    );
                }
            }
            self.expectation(&format!("{path}.expect"), &fix.expect, s);
        }
    }

    /// Each ordering and stale-view choice names a component, within the run.
    fn ordering(&mut self, s: &Scenario, defined: &Defined<'_>) {
        for (i, choice) in s.ordering.iter().enumerate() {
            self.reference(format!("ordering[{i}].first"), &choice.first, &defined.components);
            if choice.at > s.duration {
                self.report(
                    format!("ordering[{i}].at"),
                    format!("choice at {} is after the end of the run at {}", choice.at, s.duration),
                );
            }
        }
        for (i, stale) in s.stale_views.iter().enumerate() {
            self.reference(format!("staleViews[{i}].component"), &stale.component, &defined.components);
            if stale.at > s.duration {
                self.report(
                    format!("staleViews[{i}].at"),
                    format!("choice at {} is after the end of the run at {}", stale.at, s.duration),
                );
            }
        }
    }

    /// A scenario may raise a plugin limit only so far: scenarios travel in
    /// share links, and opening one must not let it ask a visitor's browser
    /// for gigabytes or minutes per call.
    fn plugin_limits(&mut self, s: &Scenario) {
        use crate::PluginSetting as S;
        let p = &s.limits.plugins;
        let fields = [
            (S::FuelPerCall, p.fuel_per_call),
            (S::FuelPerVirtualSecond, p.fuel_per_virtual_second),
            (S::MemoryBytes, p.memory_bytes),
            (S::MaxCallDepth, p.max_call_depth.map(u64::from)),
            (S::MaxOutputBytes, p.max_output_bytes),
            (S::MaxActionsPerCall, p.max_actions_per_call.map(u64::from)),
            (S::MaxModuleBytes, p.max_module_bytes),
            (S::MaxFunctions, p.max_functions.map(u64::from)),
        ];
        for (setting, value) in fields {
            let (name, most) = (setting.name(), setting.most());
            if let Some(value) = value.filter(|&v| v > most) {
                self.report(
                    format!("limits.plugins.{name}"),
                    format!("{name} {value} is above the most a scenario may set, {most}"),
                );
            }
        }
        let run = [
            ("maxTraceEntries", s.limits.max_trace_entries, crate::RunLimits::MAX_TRACE_ENTRIES),
            ("maxObjectBytes", s.limits.max_object_bytes, crate::RunLimits::MAX_OBJECT_BYTES),
        ];
        for (name, value, most) in run {
            if value > most {
                self.report(
                    format!("limits.{name}"),
                    format!("{name} {value} is above the most a scenario may set, {most}"),
                );
            }
        }
    }
}
