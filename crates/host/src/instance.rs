//! A plugin instance, whatever the engine: the ABI's calling protocol (write
//! the input through `recon_alloc`, call, read the result back, word every
//! failure) on top of the raw calls of the engine built for this target.

use std::borrow::Cow;
use std::fmt::Display;
use std::sync::Arc;

use recon_abi::{
    ABI_VERSION, ComponentConfig, Container, ContainerChanges, Crash, Delivered, Input, InputEvent, Instance, Manifest,
    Output, SentContainers,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::call::{Call, Logs, crash, one_line};
use crate::limits::raised_by;
use crate::{CompiledPlugin, Engine, Limits, Module, PluginError};
use crate::{Meters, Trap};
use recon_scenario::PluginSetting;

/// The engine's side of an instance on this target.
#[cfg(not(target_arch = "wasm32"))]
type EngineInstance = crate::engine::Wasmtime;
/// The engine's side of an instance on this target.
#[cfg(target_arch = "wasm32")]
type EngineInstance = crate::browser::Browser;

/// One instantiated module as an engine runs it: its exports, its memory and
/// the instrumentation's meters. [`WasmInstance`] speaks the ABI on top.
pub(crate) trait Machine {
    /// Why a call failed, in the engine's terms.
    type Error;

    /// Fills the fuel meter with `fuel` (the call's [`Budget`]) (and rearms
    /// an engine backstop, if the engine has one). The depth and stack
    /// meters are left alone: they start at 0 in a new instance, every call
    /// that returns leaves them at 0 (each function undoes its charge on
    /// the way out), and after a call that traps there is no other. Fails
    /// only on a host bug, with one line.
    fn reset_meters(&mut self, fuel: i64) -> Result<(), String>;

    /// The fuel meter, as the last call left it: all a call that returned
    /// needs read.
    fn fuel_left(&mut self) -> i64;

    /// Every meter, as the last call left them: what explains a trap.
    fn meters(&mut self) -> Meters;

    /// The size of the memory in bytes.
    fn memory_bytes(&mut self) -> u64;

    /// Writes `bytes` at `at`; false if they do not fit in memory.
    fn write(&mut self, at: u64, bytes: &[u8]) -> bool;

    /// The `len` bytes at `at`, or `None` if they are not all in memory.
    fn read(&mut self, at: u64, len: u64) -> Option<Cow<'_, [u8]>>;

    /// Calls `recon_abi_version`.
    fn abi_version(&mut self) -> Result<i32, Self::Error>;

    /// Calls `recon_alloc(len)`.
    fn alloc(&mut self, len: i32) -> Result<i32, Self::Error>;

    /// Calls `recon_init` or `recon_handle`.
    fn call(&mut self, call: Call, ptr: i32, len: i32) -> Result<i64, Self::Error>;

    /// The trap that failed a call, as every engine names it.
    fn trap(error: &Self::Error) -> crate::Trap;

    /// The `recon.log` lines the instance keeps.
    fn logs(&mut self) -> impl std::ops::DerefMut<Target = Logs> + '_;
}

/// One instance of a plugin: one component's life between (re)starts.
///
/// The first failed call crashes it for good (memory may be inconsistent
/// after a trap); the host starts a fresh one, as the ABI says.
pub struct WasmInstance {
    name: Arc<str>,
    limits: Limits,
    machine: EngineInstance,
    fuel_used: u64,
    crashed: bool,
    /// What the next (or current) call may spend.
    budget: Budget,
    /// The fuel `handle` calls spent in the virtual second they ran in.
    second: SecondMeter,
    /// What the plugin's watches delivered, if its manifest asked for
    /// unchanged parts to be left out (`omitUnchanged`).
    delivered: Option<Delivered>,
    /// The last list of containers it was sent, if its manifest asked for
    /// what changed in place of the list (`containerChanges`).
    containers: Option<SentContainers>,
}

/// An [`Input`] as one plugin is sent it (a [`recon_abi::WireInput`],
/// borrowed): the same encoding, with each watch event leaving out what its
/// watch already delivered, and the containers as what changed since the
/// last list, when the plugin asked for those.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireInput<'a> {
    time_ms: u64,
    events: Vec<Cow<'a, InputEvent>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    containers: Option<&'a [Container]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    container_changes: Option<ContainerChanges>,
}

impl<'a> WireInput<'a> {
    /// `input` for a plugin with `delivered` and `sent` (brought up to
    /// date), or, for one without, as it is.
    fn new(input: &'a Input, delivered: Option<&mut Delivered>, sent: Option<&mut SentContainers>) -> WireInput<'a> {
        let events = match delivered {
            None => input.events.iter().map(Cow::Borrowed).collect(),
            Some(delivered) => input
                .events
                .iter()
                .map(|event| {
                    let unchanged = delivered.send(event);
                    match event {
                        InputEvent::Watch { watch, event: whole } if !unchanged.is_empty() => {
                            let event = recon_abi::WatchEvent { unchanged, ..whole.clone() };
                            Cow::Owned(InputEvent::Watch { watch: *watch, event })
                        }
                        _ => Cow::Borrowed(event),
                    }
                })
                .collect(),
        };
        let (containers, container_changes) = match (&input.containers, sent) {
            (Some(list), Some(sent)) => match sent.send(list) {
                Some(changes) => (None, Some(changes)),
                None => (Some(&**list), None),
            },
            (list, _) => (list.as_deref(), None),
        };
        WireInput { time_ms: input.time_ms, events, containers, container_changes }
    }
}

/// What one call may spend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Budget {
    /// [`Limits::fuel_per_call`].
    Call,
    /// What is left of [`Limits::fuel_per_virtual_second`] in the call's
    /// virtual second, when that is less than a call's budget.
    RestOfSecond { left: u64 },
}

impl Budget {
    /// The fuel, as the instrumented counter (an `i64` global) holds it.
    fn fuel(self, limits: &Limits) -> i64 {
        match self {
            Budget::Call => limits.fuel_budget(),
            Budget::RestOfSecond { left, .. } => i64::try_from(left).unwrap_or(i64::MAX),
        }
    }
}

/// The fuel spent by `handle` calls in one virtual second.
#[derive(Clone, Copy, Debug, Default)]
struct SecondMeter {
    /// Which second: `time_ms / 1000`.
    second: u64,
    /// The fuel spent in it so far.
    used: u64,
    /// The objects its calls' inputs brought so far (see [`FUEL_PER_INPUT_OBJECT`]).
    objects: u64,
}

/// The default of [`Limits::fuel_per_input_object`]: a scheduler handed
/// 3,000 pods at once (the scale benchmark's smallest cluster) needs it.
pub const FUEL_PER_INPUT_OBJECT: u64 = 20_000_000;

/// How many objects an input brings: timers bring none.
fn input_objects(input: &Input) -> u64 {
    let objects = |e: &InputEvent| match e {
        InputEvent::Listed { objects, .. } => objects.len().max(1),
        InputEvent::Watch { .. } | InputEvent::Result(_) => 1,
        InputEvent::Timer { .. } => 0,
    };
    input.events.iter().map(objects).sum::<usize>() as u64
}

impl SecondMeter {
    /// The budget of a call at `input.time_ms`: a call's, unless less than
    /// that is left of its virtual second (a new second starts afresh).
    fn budget(&mut self, input: &Input, limits: &Limits) -> Budget {
        let second = input.time_ms / 1000;
        if second != self.second {
            *self = SecondMeter { second, used: 0, objects: 0 };
        }
        self.objects = self.objects.saturating_add(input_objects(input));
        let left = self.allowance(limits).saturating_sub(self.used);
        if left < limits.fuel_per_call { Budget::RestOfSecond { left } } else { Budget::Call }
    }

    /// The second's budget so far.
    fn allowance(&self, limits: &Limits) -> u64 {
        limits.fuel_per_virtual_second.saturating_add(self.objects.saturating_mul(limits.fuel_per_input_object))
    }
}

impl WasmInstance {
    /// Wraps a fresh instance after checking that `recon_abi_version`
    /// returns [`ABI_VERSION`].
    pub(crate) fn start(name: Arc<str>, limits: Limits, machine: EngineInstance) -> Result<WasmInstance, Crash> {
        let mut wasm = WasmInstance {
            name,
            limits,
            machine,
            fuel_used: 0,
            crashed: false,
            budget: Budget::Call,
            second: SecondMeter::default(),
            delivered: None,
            containers: None,
        };
        wasm.reset_meters()?;
        let found = wasm.machine.abi_version().map_err(|e| wasm.trapped("recon_abi_version", e))?;
        if found != ABI_VERSION as i32 {
            let detail = format!("returned {found}, but this host speaks ABI version {ABI_VERSION}");
            return Err(wasm.crash("recon_abi_version", detail));
        }
        Ok(wasm)
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The fuel the last call consumed (its `recon_alloc` included): the
    /// same number in every engine. The whole budget if it ran out; after
    /// another trap, what the call had consumed when it last entered,
    /// called or left a function (each function keeps its count in a
    /// local in between).
    pub fn fuel_used(&self) -> u64 {
        self.fuel_used
    }

    /// The lines the plugin logged through `recon.log` since the last call of
    /// this method. At most 1,000 lines of at most 4 KiB are kept; a last
    /// line says how many more were dropped.
    pub fn take_logs(&mut self) -> Vec<String> {
        self.machine.logs().take()
    }

    fn call<T: DeserializeOwned>(&mut self, call: Call, input: &impl Serialize) -> Result<T, Crash> {
        if self.crashed {
            return Err(self.crash(call.export(), "was called after the instance crashed"));
        }
        let result = self.try_call(call, input);
        self.crashed = result.is_err();
        result
    }

    fn try_call<T: DeserializeOwned>(&mut self, call: Call, input: &impl Serialize) -> Result<T, Crash> {
        let export = call.export();
        let input = serde_json::to_vec(input).map_err(|e| self.crash(export, format!("input did not encode: {e}")))?;
        let len = i32::try_from(input.len())
            .map_err(|_| self.crash(export, format!("input of {} bytes does not fit in 32 bits", input.len())))?;

        // The input's allocation and the call share one budget.
        self.reset_meters()?;
        self.machine.logs().start_call();
        let ptr = self.machine.alloc(len).map_err(|e| self.trapped("recon_alloc", e))?;
        if ptr == 0 {
            return Err(self.crash("recon_alloc", format!("returned 0 (could not allocate {len} bytes)")));
        }
        if !self.machine.write(u64::from(ptr as u32), &input) {
            let size = self.machine.memory_bytes();
            let detail =
                format!("returned {:#x}, where {len} bytes do not fit in a memory of {size} bytes", ptr as u32);
            return Err(self.crash("recon_alloc", detail));
        }
        let packed = self.machine.call(call, ptr, len).map_err(|e| self.trapped(export, e))?;
        let fuel_left = self.machine.fuel_left();
        self.record_fuel(fuel_left);

        let sizes = (self.machine.memory_bytes(), self.limits.max_output_bytes);
        call.decode(&self.name, packed, sizes, |at, len| self.machine.read(at, len))
    }

    /// Fills the budget before a call.
    fn reset_meters(&mut self) -> Result<(), Crash> {
        self.machine
            .reset_meters(self.budget.fuel(&self.limits))
            .map_err(|reason| self.crash("meters", format!("could not be reset (a host bug): {reason}")))
    }

    /// Records the fuel used by the call that just ended, which left
    /// `fuel_left` of its budget.
    fn record_fuel(&mut self, fuel_left: i64) {
        self.fuel_used = self.budget.fuel(&self.limits).saturating_sub(fuel_left.max(0)).unsigned_abs();
    }

    /// The crash for a call that trapped, explained from the meters.
    fn trapped(&mut self, export: &str, error: <EngineInstance as Machine>::Error) -> Crash {
        let meters = self.machine.meters();
        self.record_fuel(meters.fuel_left);
        let memory_bytes = self.machine.memory_bytes();
        let mut reason = EngineInstance::trap(&error).explain(&self.limits, meters, memory_bytes);
        // The crash entry says when; the reason says which budget ran out.
        if let (Budget::RestOfSecond { .. }, true) = (self.budget, meters.fuel_left < 0) {
            let per_second = self.limits.fuel_per_virtual_second;
            let raise = raised_by(PluginSetting::FuelPerVirtualSecond, per_second);
            reason = match self.limits.fuel_per_input_object {
                0 => {
                    format!("ran out of fuel for this virtual second (budget {per_second} per virtual second; {raise})")
                }
                per_object => format!(
                    "ran out of fuel for this virtual second (budget {per_second} per virtual second, \
                     plus {per_object} per object its input brought; {raise})"
                ),
            };
        }
        // A plain `unreachable` right after a panic hook's line is that
        // panic (Rust's abort): the line says far more than the trap.
        let plain = format!("trapped: {}", Trap::Unreachable);
        let panic = self.machine.logs().panic().map(str::to_owned);
        if let Some(panic) = panic.filter(|_| reason.starts_with(&plain)) {
            reason = reason.replacen(&plain, &one_line(&panic), 1);
        }
        self.crash(export, reason)
    }

    fn crash(&self, export: &str, detail: impl Display) -> Crash {
        crash(&self.name, export, detail)
    }
}

impl Instance for WasmInstance {
    fn init(&mut self, config: &ComponentConfig) -> Result<Manifest, Crash> {
        let manifest: Manifest = self.call(Call::Init, config)?;
        if manifest.abi_version != ABI_VERSION {
            self.crashed = true;
            let detail = format!(
                "returned a manifest for ABI version {}, but this host speaks ABI version {ABI_VERSION}",
                manifest.abi_version
            );
            return Err(self.crash("recon_init", detail));
        }
        self.delivered = manifest.omit_unchanged.then(Delivered::new);
        self.containers = manifest.container_changes.then(SentContainers::new);
        Ok(manifest)
    }

    fn handle(&mut self, input: &Input) -> Result<Output, Crash> {
        self.budget = self.second.budget(input, &self.limits);
        let wire = WireInput::new(input, self.delivered.as_mut(), self.containers.as_mut());
        let output = self.call(Call::Handle, &wire);
        self.second.used = self.second.used.saturating_add(self.fuel_used);
        self.budget = Budget::Call;
        let output: Output = output?;
        let max = self.limits.max_actions_per_call;
        if output.actions.len() > max as usize {
            self.crashed = true;
            let raise = raised_by(PluginSetting::MaxActionsPerCall, u64::from(max));
            let detail =
                format!("returned {} actions, above the limit of {max} per call; {raise}", output.actions.len());
            return Err(self.crash("recon_handle", detail));
        }
        Ok(output)
    }

    fn take_logs(&mut self) -> Vec<String> {
        WasmInstance::take_logs(self)
    }
}

impl CompiledPlugin {
    /// A fresh instance for the simulator: [`CompiledPlugin::instantiate`]'s,
    /// or, if that failed, one whose every call crashes with that reason
    /// (which the simulator reports and backs off from, like any crash).
    pub fn start(&self) -> Box<dyn Instance> {
        match self.instantiate() {
            Ok(instance) => Box::new(instance),
            Err(crash) => Box::new(Failed(crash)),
        }
    }
}

/// A plugin that could not even be instantiated: every call crashes with the
/// reason.
struct Failed(Crash);

impl Instance for Failed {
    fn init(&mut self, _: &ComponentConfig) -> Result<Manifest, Crash> {
        Err(self.0.clone())
    }

    fn handle(&mut self, _: &Input) -> Result<Output, Crash> {
        Err(self.0.clone())
    }
}

/// Why an instance could not be created, as a crash of the plugin `name`.
pub(crate) fn not_instantiated(name: &str, error: &impl Display) -> Crash {
    Crash::new(format!("{name}: could not be instantiated: {}", one_line(error)))
}

/// An export the host added or validation checked is missing: a host bug.
pub(crate) fn lost_export(name: &str, what: &str) -> Crash {
    Crash::new(format!("{name}: lost its export {what} in instrumentation (a host bug)"))
}

/// Loads, compiles and starts a plugin, and returns its manifest: what
/// `recon check-plugin` prints. The instance is configured as component
/// `check` on node `node-1`.
pub fn check(name: &str, bytes: &[u8], limits: &Limits) -> Result<Manifest, PluginError> {
    let module = Module::load(name, bytes, limits)?;
    let mut instance = Engine::new()?.compile(&module)?.instantiate()?;
    let config = ComponentConfig { name: "check".into(), node: Some("node-1".into()), ..Default::default() };
    Ok(instance.init(&config)?)
}

/// A call that returns leaves the depth and stack meters where it found
/// them, whatever way each function leaves (falling off its end,
/// `return` from inside blocks, a branch to its own label): what lets the
/// host fill only the fuel before each call.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod meter_tests {
    use recon_abi::{ComponentConfig, Input, Instance};

    use crate::{Engine, Limits, Module};

    const PLUGIN: &str = r#"(module
      (memory (export "memory") 1)
      (data (i32.const 0x100) "{\"name\":\"m\",\"abiVersion\":1}")
      (data (i32.const 0x200) "{}")
      (func (export "recon_abi_version") (result i32) i32.const 1)
      (func (export "recon_alloc") (param i32) (result i32) i32.const 0x1000)
      (func (export "recon_init") (param i32 i32) (result i64) i64.const 0x1000000001b)
      ;; Recurses n deep, returning from inside nested blocks on the way.
      (func $down (param $n i32) (result i32)
        (block (block
          (br_if 1 (i32.eqz (local.get $n)))
          (return (i32.add (i32.const 1) (call $down (i32.sub (local.get $n) (i32.const 1)))))))
        i32.const 0)
      ;; Leaves by a branch to its own label, from a loop.
      (func $spin (param $n i32)
        (loop $again
          (br_if 1 (i32.eqz (local.get $n)))
          (local.set $n (i32.sub (local.get $n) (i32.const 1)))
          (br $again)))
      (func (export "recon_handle") (param i32 i32) (result i64)
        (drop (call $down (i32.const 5)))
        (call $spin (i32.const 3))
        i64.const 0x20000000002))"#;

    #[test]
    fn a_call_that_returns_leaves_depth_and_stack_at_zero() {
        let bytes = wat::parse_str(PLUGIN).unwrap();
        let module = Module::load("meters.wasm", &bytes, &Limits::default()).unwrap();
        let mut instance = Engine::new().unwrap().compile(&module).unwrap().instantiate().unwrap();
        instance.init(&ComponentConfig::default()).unwrap();
        for time_ms in 0..3 {
            let input = Input { time_ms, events: Vec::new(), containers: None };
            instance.handle(&input).unwrap();
            let meters = super::Machine::meters(&mut instance.machine);
            assert_eq!((meters.depth, meters.stack_bytes), (0, 0), "after call {time_ms}");
            assert!(instance.fuel_used() > 0);
        }
    }
}

#[cfg(test)]
mod wire_tests {
    use std::sync::Arc;

    use recon_abi::{EventType, Input, InputEvent, Object, ObjectMeta, ObjectPart, WatchEvent};

    use super::*;

    fn pod(version: &str, phase: &str) -> Arc<Object> {
        Arc::new(Object {
            api_version: "v1".into(),
            kind: "Pod".into(),
            metadata: ObjectMeta { name: "web-0".into(), resource_version: version.into(), ..ObjectMeta::default() },
            spec: serde_json::json!({ "nodeName": "node-1" }).into(),
            status: serde_json::json!({ "phase": phase }).into(),
            ..Object::default()
        })
    }

    fn input(events: Vec<InputEvent>) -> Input {
        Input { time_ms: 3, events, containers: Some(Vec::new().into()) }
    }

    fn watch(object: Arc<Object>) -> InputEvent {
        InputEvent::Watch { watch: 0, event: WatchEvent::new(EventType::Modified, object) }
    }

    // A plugin that did not ask is sent exactly the input's own encoding.
    #[test]
    fn without_omit_unchanged_the_wire_is_the_input() {
        let input = input(vec![
            InputEvent::Listed { watch: 0, resource_version: "1".into(), objects: vec![pod("1", "Pending")] },
            watch(pod("2", "Pending")),
        ]);
        let wire = serde_json::to_vec(&WireInput::new(&input, None, None)).unwrap();
        assert_eq!(wire, serde_json::to_vec(&input).unwrap());
    }

    // One that asked is sent only what changed, once its watch delivered
    // the object; the rest of the input is encoded as before.
    #[test]
    fn with_omit_unchanged_a_watch_event_leaves_out_what_its_watch_delivered() {
        let mut delivered = Delivered::new();
        let first = input(vec![
            InputEvent::Listed { watch: 0, resource_version: "1".into(), objects: vec![pod("1", "Pending")] },
            InputEvent::Timer { key: "k".into() },
        ]);
        let wire = serde_json::to_vec(&WireInput::new(&first, Some(&mut delivered), None)).unwrap();
        assert_eq!(wire, serde_json::to_vec(&first).unwrap(), "a list is sent whole");
        let second = input(vec![watch(pod("2", "Running")), watch(pod("3", "Running"))]);
        let wire: serde_json::Value =
            serde_json::to_value(WireInput::new(&second, Some(&mut delivered), None)).unwrap();
        let events = wire["events"].as_array().unwrap();
        assert_eq!(events[0]["event"]["unchanged"], serde_json::json!(["spec"]));
        assert_eq!(events[0]["event"]["object"].get("spec"), None);
        assert_eq!(events[0]["event"]["object"]["status"]["phase"], "Running");
        // The second event's status equals the first's, which the same
        // input has just delivered.
        assert_eq!(events[1]["event"]["unchanged"], serde_json::json!(["spec", "status"]));
        let decoded: Input = serde_json::from_value(wire).unwrap();
        let InputEvent::Watch { event, .. } = &decoded.events[1] else { panic!("a watch event") };
        assert_eq!(event.unchanged, vec![ObjectPart::Spec, ObjectPart::Status]);
    }

    // One that asked for container changes is sent its first list whole,
    // then only what changed (`{}` for the same list), and the plugin's
    // side rebuilds every list from the wire.
    #[test]
    fn with_container_changes_a_node_agent_is_sent_what_changed() {
        use recon_abi::PodRef;
        let running = |names: &[&str]| -> Input {
            let containers: Vec<Container> = names
                .iter()
                .map(|name| Container {
                    pod: PodRef { namespace: "default".into(), name: (*name).into(), uid: format!("uid-{name}") },
                    started_at_ms: 1,
                })
                .collect();
            Input { time_ms: 3, events: Vec::new(), containers: Some(containers.into()) }
        };
        let (mut sent, mut kept) = (SentContainers::new(), SentContainers::new());
        let inputs = [running(&["a", "b"]), running(&["a", "b", "c"]), running(&["c"]), running(&[])];
        for (i, input) in inputs.iter().enumerate() {
            for again in [false, true] {
                let wire = serde_json::to_value(WireInput::new(input, None, Some(&mut sent))).unwrap();
                match (i, again) {
                    (0, false) => assert!(wire.get("containerChanges").is_none() && wire["containers"].is_array()),
                    (_, true) => assert_eq!(wire["containerChanges"], serde_json::json!({}), "input {i} again"),
                    _ => assert!(wire.get("containers").is_none(), "input {i}: {wire}"),
                }
                let decoded: recon_abi::WireInput = serde_json::from_value(wire).unwrap();
                let list = kept.receive(decoded.containers, decoded.container_changes).unwrap();
                assert_eq!(list, input.containers, "input {i}");
            }
        }
        let changes = serde_json::to_value(WireInput::new(&inputs[1], None, Some(&mut sent))).unwrap();
        assert_eq!(changes["containerChanges"]["started"][0]["pod"]["name"], "a");
        assert_eq!(changes["containerChanges"]["started"][1]["pod"]["name"], "b");
        assert_eq!(changes["containerChanges"]["started"].as_array().unwrap().len(), 3, "from no containers");
    }
}
