//! A plugin's life at run time: calls, crashes, fuel and logs, with the
//! exact reasons and counts every engine must give.

use recon_abi::{Action, Instance, ListMode, Manifest, Output, Verb, WatchSpec, WritePermission};
use recon_host::{Limits, PluginError, check};

use super::*;

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_well_behaved_plugin_round_trips_manifest_input_output_and_logs() {
    let manifest = r#"{"name":"echo","abiVersion":1,"watches":[{"kind":"Pod","fieldSelector":"spec.nodeName=node-1"}],"writes":[{"kind":"Pod","verbs":["create","delete"]}],"nodeAgent":true,"listMode":"quorum"}"#;
    let output = r#"{"actions":[{"type":"requeueAfter","key":"again","afterMs":250}]}"#;
    let plugin = Plugin {
        manifest,
        output,
        // Logs its input, then returns the output.
        handle: format!("(call $log (local.get $ptr) (local.get $len)) i64.const {}", packed(OUTPUT_AT, output.len())),
        ..Plugin::default()
    };
    let mut instance = plugin.compile(&Limits::default()).instantiate().unwrap();
    let expected = Manifest {
        name: "echo".into(),
        abi_version: 1,
        watches: vec![WatchSpec {
            kind: "Pod".into(),
            field_selector: "spec.nodeName=node-1".into(),
            ..WatchSpec::default()
        }],
        writes: vec![WritePermission { kind: "Pod".into(), verbs: vec![Verb::Create, Verb::Delete] }],
        node_agent: true,
        list_mode: ListMode::Quorum,
        ..Manifest::default()
    };
    assert_eq!(instance.init(&config()).unwrap(), expected);
    assert!(instance.fuel_used() > 0);
    for n in [0, 5] {
        let out = instance.handle(&input(n)).unwrap();
        assert_eq!(out, Output::new(vec![Action::RequeueAfter { key: "again".into(), after_ms: 250 }]));
        assert_eq!(instance.take_logs(), [serde_json::to_string(&input(n)).unwrap()]);
    }
    assert!(instance.take_logs().is_empty());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn check_starts_the_plugin_and_returns_its_manifest() {
    let manifest = check("test.wasm", &Plugin::default().bytes(), &Limits::default()).unwrap();
    assert_eq!(manifest, Manifest { name: "test".into(), abi_version: 1, ..Manifest::default() });
    let err = check("test.wasm", &Plugin::handling("unreachable").bytes()[..40], &Limits::default()).unwrap_err();
    assert!(matches!(err, PluginError::Invalid { .. }), "{err:?}");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_wrong_abi_version_is_a_crash_at_instantiation() {
    let plugin = Plugin { abi_version: 2, ..Plugin::default() };
    let err = check("v2.wasm", &plugin.bytes(), &Limits::default()).unwrap_err();
    assert!(matches!(err, PluginError::Crash(_)), "{err:?}");
    assert_eq!(err.to_string(), "v2.wasm: recon_abi_version returned 2, but this host speaks ABI version 1");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_manifest_for_another_abi_version_crashes_init() {
    let plugin = Plugin { manifest: r#"{"name":"test","abiVersion":7}"#, ..Plugin::default() };
    let mut instance = plugin.compile(&Limits::default()).instantiate().unwrap();
    let crash = instance.init(&config()).unwrap_err();
    assert_eq!(
        crash.reason,
        "test.wasm: recon_init returned a manifest for ABI version 7, but this host speaks ABI version 1"
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn an_infinite_loop_runs_out_of_fuel_and_the_host_stays_usable() {
    let limits = Limits { fuel_per_call: 1_000_000, ..Limits::default() };
    let compiled = Plugin::handling("(loop (br 0)) unreachable").compile(&limits);
    let mut instance = compiled.instantiate().unwrap();
    instance.init(&config()).unwrap();
    let crash = instance.handle(&input(0)).unwrap_err();
    assert_eq!(
        crash.reason,
        "test.wasm: recon_handle ran out of fuel (budget 1000000 per call; the scenario's limits.plugins.fuelPerCall raises it, up to 100000000000)"
    );
    assert_eq!(instance.fuel_used(), 1_000_000);
    // The instance is dead, but a fresh one from the same compiled plugin works.
    let again = instance.handle(&input(0)).unwrap_err();
    assert_eq!(again.reason, "test.wasm: recon_handle was called after the instance crashed");
    let mut fresh = compiled.instantiate().unwrap();
    assert_eq!(fresh.init(&config()).unwrap().name, "test");
}

/// Issue 20: the calls of one virtual second share its budget, counted in
/// fuel and the input's `time_ms`, never real time.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn the_calls_of_one_virtual_second_share_its_fuel_and_the_next_second_starts_afresh() {
    let limits = Limits {
        fuel_per_call: 1_000_000,
        fuel_per_virtual_second: 2_500_000,
        fuel_per_input_object: 0,
        ..Limits::default()
    };
    // About 600,000 fuel a call (six instructions a turn of the loop).
    let spend = format!(
        "(local.set $i (i32.const 100000)) \
         (loop (local.set $i (i32.sub (local.get $i) (i32.const 1))) (br_if 0 (local.get $i))) i64.const {}",
        packed(OUTPUT_AT, OUTPUT.len())
    );
    let compiled = Plugin::handling(spend).compile(&limits);
    let at = |time_ms| recon_abi::Input { time_ms, ..input(0) };
    let mut instance = compiled.instantiate().unwrap();
    instance.init(&config()).unwrap();
    // Four calls fit in second 0; each new second has the whole budget again.
    for time_ms in [0, 250, 500, 999, 1_000, 1_001, 1_002, 1_999, 2_000] {
        instance.handle(&at(time_ms)).unwrap_or_else(|c| panic!("at {time_ms} ms: {}", c.reason));
        assert!((600_000..700_000).contains(&instance.fuel_used()), "{}", instance.fuel_used());
    }
    let per_call = instance.fuel_used();
    // The fifth call of second 2 gets only what is left of it, and runs out.
    for time_ms in [2_001, 2_002, 2_003] {
        instance.handle(&at(time_ms)).unwrap();
    }
    let crash = instance.handle(&at(2_004)).unwrap_err();
    assert_eq!(
        crash.reason,
        "test.wasm: recon_handle ran out of fuel for this virtual second (budget 2500000 per virtual second; the scenario's limits.plugins.fuelPerVirtualSecond raises it, up to 100000000000)"
    );
    assert_eq!(instance.fuel_used(), 2_500_000 - 4 * per_call, "the whole rest of the second, no more");
    // A fresh instance of the same plugin at a later time is not held to the old second.
    let mut fresh = compiled.instantiate().unwrap();
    fresh.init(&config()).unwrap();
    assert!(fresh.handle(&at(3_000)).is_ok());
}

/// The objects a call's input brings pay for the work they ask for: a
/// second in which a plugin is handed many objects (a scheduler given a
/// cluster's pods at once) has more to spend, a second of timers alone
/// does not.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn the_objects_an_input_brings_add_to_the_budget_of_their_second() {
    let per_object = recon_host::FUEL_PER_INPUT_OBJECT;
    let limits = Limits { fuel_per_call: per_object, fuel_per_virtual_second: per_object / 2, ..Limits::default() };
    // About 0.6 of an object's allowance a call.
    let spend = format!(
        "(local.set $i (i32.const {})) \
         (loop (local.set $i (i32.sub (local.get $i) (i32.const 1))) (br_if 0 (local.get $i))) i64.const {}",
        per_object / 10,
        packed(OUTPUT_AT, OUTPUT.len())
    );
    let compiled = Plugin::handling(spend).compile(&limits);
    let watched = |time_ms, n: usize| recon_abi::Input {
        time_ms,
        events: (0..n)
            .map(|i| {
                recon_abi::InputEvent::Result(Box::new(recon_abi::ActionResult {
                    verb: recon_abi::Verb::Get,
                    key: recon_abi::ObjectKey::new("Pod", "default", format!("p{i}")),
                    outcome: recon_abi::Outcome::Ok(None),
                    id: None,
                }))
            })
            .collect(),
        containers: None,
    };
    let mut instance = compiled.instantiate().unwrap();
    instance.init(&config()).unwrap();
    // Three objects in second 0: half an object's allowance plus three, so
    // five calls fit where, on timers alone, not even one would.
    instance.handle(&watched(0, 3)).unwrap();
    for time_ms in [1, 2, 3, 4] {
        instance.handle(&watched(time_ms, 0)).unwrap_or_else(|c| panic!("at {time_ms} ms: {}", c.reason));
    }
    let crash = instance.handle(&watched(5, 0)).unwrap_err();
    assert_eq!(
        crash.reason,
        format!(
            "test.wasm: recon_handle ran out of fuel for this virtual second (budget {} per virtual second, \
             plus {per_object} per object its input brought; the scenario's limits.plugins.fuelPerVirtualSecond raises it, up to 100000000000)",
            per_object / 2
        )
    );
    // Timers bring nothing: a fresh instance gets only the base budget.
    let mut fresh = compiled.instantiate().unwrap();
    fresh.init(&config()).unwrap();
    let crash = fresh.handle(&recon_abi::Input { time_ms: 0, ..input(0) }).unwrap_err();
    assert!(crash.reason.contains("ran out of fuel for this virtual second"), "{}", crash.reason);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn unbounded_memory_growth_stops_at_the_cap() {
    let limits = Limits { memory_bytes: 1 << 20, ..Limits::default() };
    // Grows until memory.grow says -1, then aborts as Rust's allocator would.
    let plugin = Plugin::handling("(loop (br_if 0 (i32.ne (memory.grow (i32.const 1)) (i32.const -1)))) unreachable");
    assert_eq!(
        handle_crash(&plugin, &limits),
        "test.wasm: recon_handle trapped: executed an unreachable instruction, with its memory at the cap (1048576 bytes; the scenario's limits.plugins.memoryBytes raises it, up to 1073741824)"
    );
    // One big request fails too, and the module can report it.
    let plugin = Plugin::handling(format!(
        "(if (i32.ne (memory.grow (i32.const 100)) (i32.const -1)) (then unreachable)) i64.const {}",
        packed(OUTPUT_AT, OUTPUT.len())
    ));
    let mut instance = plugin.compile(&limits).instantiate().unwrap();
    instance.init(&config()).unwrap();
    assert_eq!(instance.handle(&input(0)).unwrap(), Output::default());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_trap_crashes_the_instance_with_an_engine_independent_reason() {
    let trap = |handle: &str| handle_crash(&Plugin::handling(handle), &Limits::default());
    assert_eq!(trap("unreachable"), "test.wasm: recon_handle trapped: executed an unreachable instruction");
    assert_eq!(
        trap("(drop (i32.load (i32.const -4))) i64.const 0"),
        "test.wasm: recon_handle trapped: accessed memory out of bounds"
    );
    assert_eq!(
        trap("(drop (i32.div_u (i32.const 1) (local.get $i))) i64.const 0"),
        "test.wasm: recon_handle trapped: divided an integer by zero"
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn deep_recursion_crashes_at_exactly_the_depth_limit() {
    let recursive = |n: u32| Plugin {
        // recon_handle is depth 1, rec(n) depth 2, ..., rec(0) depth n + 2.
        handle: format!("(drop (call $rec (i32.const {n}))) i64.const {}", packed(OUTPUT_AT, OUTPUT.len())),
        extra: "(func $rec (param i32) (result i32)
                  (if (result i32) (local.get 0)
                    (then (call $rec (i32.sub (local.get 0) (i32.const 1))))
                    (else (i32.const 0))))",
        ..Plugin::default()
    };
    let limits = Limits { max_call_depth: 10, ..Limits::default() };
    let mut instance = recursive(8).compile(&limits).instantiate().unwrap();
    instance.init(&config()).unwrap();
    assert_eq!(instance.handle(&input(0)).unwrap(), Output::default());
    assert_eq!(
        handle_crash(&recursive(9), &limits),
        "test.wasm: recon_handle exceeded the call depth limit (10; the scenario's limits.plugins.maxCallDepth raises it, up to 100000)"
    );
    // Unbounded recursion hits the default limit before the engine's stack.
    assert_eq!(
        handle_crash(&recursive(1_000_000), &Limits::default()),
        "test.wasm: recon_handle exceeded the call depth limit (2000; the scenario's limits.plugins.maxCallDepth raises it, up to 100000)"
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn return_and_branches_to_the_function_label_unwind_the_depth() {
    // 50 calls in sequence, each leaving early, under a depth limit of 10:
    // a missed decrement would trip the limit.
    let plugin = Plugin {
        handle: format!(
            "(local.set $i (i32.const 50))
             (loop $again
               (drop (call $returns (i32.const 1)))
               (drop (call $branches))
               (br_if $again (local.tee $i (i32.sub (local.get $i) (i32.const 1)))))
             i64.const {}",
            packed(OUTPUT_AT, OUTPUT.len())
        ),
        extra: "(func $returns (param i32) (result i32)
                  (block (block (if (local.get 0) (then (return (i32.const 7))))))
                  i32.const 8)
                (func $branches (result i32)
                  (block (result i32) (block (result i32) (br 2 (i32.const 7)))))",
        ..Plugin::default()
    };
    let limits = Limits { max_call_depth: 10, ..Limits::default() };
    let mut instance = plugin.compile(&limits).instantiate().unwrap();
    instance.init(&config()).unwrap();
    assert_eq!(instance.handle(&input(0)).unwrap(), Output::default());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn an_out_of_bounds_output_crashes() {
    let plugin = Plugin::handling(format!("i64.const {}", packed(0xffff_0000, 100)));
    assert_eq!(
        handle_crash(&plugin, &Limits::default()),
        "test.wasm: recon_handle returned an out-of-bounds result (100 bytes at 0xffff0000, in a memory of 65536 bytes)"
    );
    // Straddling the end of memory is out of bounds too.
    let plugin = Plugin::handling(format!("i64.const {}", packed(65_530, 7)));
    assert!(handle_crash(&plugin, &Limits::default()).contains("out-of-bounds result (7 bytes at 0xfffa"));
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn an_allocator_that_fails_or_points_outside_memory_crashes() {
    let zero = Plugin { alloc: "i32.const 0".into(), ..Plugin::default() };
    let mut instance = zero.compile(&Limits::default()).instantiate().unwrap();
    let crash = instance.init(&config()).unwrap_err();
    assert_eq!(crash.reason, "test.wasm: recon_alloc returned 0 (could not allocate 31 bytes)");
    let outside = Plugin { alloc: "i32.const 65530".into(), ..Plugin::default() };
    let mut instance = outside.compile(&Limits::default()).instantiate().unwrap();
    let crash = instance.init(&config()).unwrap_err();
    assert_eq!(
        crash.reason,
        "test.wasm: recon_alloc returned 0xfffa, where 31 bytes do not fit in a memory of 65536 bytes"
    );
}

// --- fuel --------------------------------------------------------------------

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn the_same_call_on_a_fresh_instance_consumes_exactly_the_same_fuel() {
    let compiled = counting_loop().compile(&Limits::default());
    let first = fuel_of(&compiled, &input(100));
    assert!(first > 900, "{first}");
    for _ in 0..3 {
        assert_eq!(fuel_of(&compiled, &input(100)), first);
    }
    // Compiled again, by another engine: still the same count.
    assert_eq!(fuel_of(&counting_loop().compile(&Limits::default()), &input(100)), first);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_loop_costs_exactly_its_body_per_iteration() {
    let compiled = counting_loop().compile(&Limits::default());
    let short = fuel_of(&compiled, &input(10));
    let long = fuel_of(&compiled, &input(1_010));
    assert_eq!(long - short, 1_000 * 9, "short {short}, long {long}");
    // alloc (i32.const, end) + the entry (block, loop) + the exit test
    // (4) + the tail (i64.const, end), plus 9 per input byte.
    let len = serde_json::to_vec(&input(10)).unwrap().len() as u64;
    assert_eq!(short, 2 + 2 + 4 + 2 + 9 * len);
}

/// Each function keeps the count in a local and hands it to its callees
/// through `recon_fuel` (issue 17): what a callee spends is counted once,
/// neither lost when the caller goes on nor charged twice.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn what_a_callee_spends_is_counted_exactly_once() {
    let calling = Plugin {
        handle: format!(
            "(block $done
               (loop $next
                 (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
                 (drop (call $work (local.get $i)))
                 (local.set $i (i32.add (local.get $i) (i32.const 1)))
                 (br $next)))
             i64.const {}",
            packed(OUTPUT_AT, OUTPUT.len())
        ),
        extra: "(func $work (param i32) (result i32) (i32.add (local.get 0) (i32.const 7)))",
        ..Plugin::default()
    }
    .compile(&Limits::default());
    let short = fuel_of(&calling, &input(10));
    let long = fuel_of(&calling, &input(1_010));
    // Per iteration: the exit test (4), the call's block (local.get, call,
    // drop, local.get, i32.const, i32.add, local.set, br: 8) and $work's
    // body (local.get, i32.const, i32.add, end: 4).
    assert_eq!(long - short, 1_000 * 16, "short {short}, long {long}");
}

/// The count is checked where a function starts, where a loop iterates and
/// where a function returns, not at every block: a call that overspends in
/// code without a loop still crashes before it returns, and it has used
/// its whole budget.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn overspending_in_loop_free_code_crashes_before_the_call_returns() {
    // 200 taken branches of 13 instructions each (`i32.const`, `if`, ten
    // `nop`s, `end`): 2,600 units and a few, in blocks of which only the
    // first is checked on the way in.
    let arm = format!("(if (i32.const 1) (then {}))", "(nop)".repeat(10));
    let plugin = Plugin::handling(format!("{} i64.const {}", arm.repeat(200), packed(OUTPUT_AT, OUTPUT.len())));
    let generous = plugin.compile(&Limits::default());
    let spent = fuel_of(&generous, &input(0));
    assert!((2_600..2_610).contains(&spent), "{spent}");
    let limits = Limits { fuel_per_call: 1_000, ..Limits::default() };
    let mut instance = plugin.compile(&limits).instantiate().unwrap();
    instance.init(&config()).unwrap();
    let crash = instance.handle(&input(0)).unwrap_err();
    assert_eq!(
        crash.reason,
        "test.wasm: recon_handle ran out of fuel (budget 1000 per call; the scenario's limits.plugins.fuelPerCall raises it, up to 100000000000)"
    );
    assert_eq!(instance.fuel_used(), 1_000);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn bulk_memory_costs_one_unit_per_8_bytes() {
    let fill = Plugin::handling(format!(
        "(memory.fill (i32.const 0x2000) (i32.const 0) (i32.mul (local.get $len) (i32.const 8)))
         i64.const {}",
        packed(OUTPUT_AT, OUTPUT.len())
    ))
    .compile(&Limits::default());
    let short = fuel_of(&fill, &input(10));
    let long = fuel_of(&fill, &input(1_010));
    assert_eq!(long - short, 1_000);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn logs_are_bounded_and_say_how_many_were_dropped() {
    let plugin = Plugin::handling(format!(
        "(local.set $i (i32.const 1500))
         (loop $again
           (call $log (i32.const {MANIFEST_AT}) (i32.const 4))
           (br_if $again (local.tee $i (i32.sub (local.get $i) (i32.const 1)))))
         (call $log (i32.const -8) (i32.const 16))
         i64.const {}",
        packed(OUTPUT_AT, OUTPUT.len())
    ));
    let mut instance = plugin.compile(&Limits::default()).instantiate().unwrap();
    instance.init(&config()).unwrap();
    instance.handle(&input(0)).unwrap();
    let logs = instance.take_logs();
    assert_eq!(logs.len(), 1_001);
    assert_eq!(logs[0], r#"{"na"#);
    assert_eq!(logs[1_000], "(501 more log lines dropped)");
    assert!(instance.take_logs().is_empty());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn an_infinite_loop_runs_out_of_the_default_budget() {
    let compiled = Plugin::handling("(loop (br 0)) unreachable").compile(&Limits::default());
    let mut instance = compiled.instantiate().unwrap();
    instance.init(&config()).unwrap();
    let crash = instance.handle(&input(0)).unwrap_err();
    assert_eq!(
        crash.reason,
        "test.wasm: recon_handle ran out of fuel (budget 1000000000 per call; the scenario's limits.plugins.fuelPerCall raises it, up to 100000000000)"
    );
    assert_eq!(instance.fuel_used(), 1_000_000_000);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn every_kind_of_trap_is_worded_by_the_host() {
    // A table with an empty slot 0 and a `() -> ()` function in slot 1.
    let table = "(type $void (func)) (type $int (func (result i32)))
                 (table 2 funcref) (elem (i32.const 1) $nop) (func $nop)";
    let trap = |handle: &str| {
        let plugin = Plugin { handle: format!("{handle} i64.const 0"), extra: table, ..Plugin::default() };
        handle_crash(&plugin, &Limits::default())
    };
    let trapped = |what: &str| format!("test.wasm: recon_handle trapped: {what}");
    let cases = [
        ("unreachable", "executed an unreachable instruction"),
        ("(drop (i64.load (i32.const 65530)))", "accessed memory out of bounds"),
        ("(memory.fill (i32.const 65000) (i32.const 0) (i32.const 1000))", "accessed memory out of bounds"),
        ("(call_indirect (type $void) (i32.const 2))", "accessed a table out of bounds"),
        ("(call_indirect (type $void) (i32.const 0))", "called an empty table slot"),
        ("(drop (table.get (i32.const 7)))", "accessed a table out of bounds"),
        ("(drop (call_indirect (type $int) (i32.const 1)))", "called a function indirectly with the wrong signature"),
        ("(drop (i32.div_s (i32.const 1) (local.get $i)))", "divided an integer by zero"),
        ("(drop (i64.rem_u (i64.const 1) (i64.extend_i32_u (local.get $i))))", "divided an integer by zero"),
        ("(drop (i32.div_s (i32.const 0x80000000) (i32.const -1)))", "overflowed an integer division"),
        ("(drop (i32.trunc_f32_s (f32.const nan)))", "converted an unrepresentable float to an integer"),
    ];
    for (handle, reason) in cases {
        assert_eq!(trap(handle), trapped(reason), "{handle}");
    }
}

/// Issue 20: V8 reports a float-to-integer conversion of NaN and of a value
/// out of range with one message, wasmtime calls the second an integer
/// overflow. The instrumentation makes an out-of-range operand NaN, so every
/// engine traps alike, and only where the specification says it must: the
/// WebAssembly core specification's `trunc` is defined when the operand's
/// integer part fits the result type and traps otherwise
/// (https://webassembly.github.io/spec/core/exec/numerics.html#op-trunc-u,
/// `trunc_s` likewise).
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_float_to_integer_conversion_traps_alike_on_nan_and_out_of_range_and_converts_up_to_the_bounds() {
    let conversion =
        |handle: String| handle_crash(&Plugin::handling(format!("{handle} i64.const 0")), &Limits::default());
    let unrepresentable = "test.wasm: recon_handle trapped: converted an unrepresentable float to an integer";
    // (conversion, its operand type, the widest operands it accepts, the nearest it refuses)
    let conversions = [
        ("i32.trunc_f32_s", "f32", ["-2147483648", "2147483520"], ["-2147483904", "2147483648"]),
        ("i32.trunc_f64_s", "f64", ["-2147483648.9", "2147483647.9"], ["-2147483649", "2147483648"]),
        ("i32.trunc_f32_u", "f32", ["-0.9", "4294967040"], ["-1", "4294967296"]),
        ("i32.trunc_f64_u", "f64", ["-0.9", "4294967295.9"], ["-1", "4294967296"]),
        (
            "i64.trunc_f32_s",
            "f32",
            ["-9223372036854775808", "9223371487098961920"],
            ["-9223373136366403584", "9223372036854775808"],
        ),
        (
            "i64.trunc_f64_s",
            "f64",
            ["-9223372036854775808", "9223372036854774784"],
            ["-9223372036854777856", "9223372036854775808"],
        ),
        ("i64.trunc_f32_u", "f32", ["-0.9", "18446742974197923840"], ["-1", "18446744073709551616"]),
        ("i64.trunc_f64_u", "f64", ["-0.9", "18446744073709549568"], ["-1", "18446744073709551616"]),
    ];
    for (op, float, accepted, refused) in conversions {
        let converts = |value: &str| format!("(drop ({op} ({float}.const {value})))");
        for value in accepted {
            let plugin = Plugin::handling(format!("{} i64.const {}", converts(value), packed(OUTPUT_AT, OUTPUT.len())));
            let mut instance = plugin.compile(&Limits::default()).instantiate().unwrap();
            instance.init(&config()).unwrap();
            assert_eq!(instance.handle(&input(0)).unwrap(), Output::default(), "{op} {value}");
        }
        for value in refused.iter().chain(&["nan", "-nan", "inf", "-inf"]) {
            assert_eq!(conversion(converts(value)), unrepresentable, "{op} {value}");
        }
    }
    // In range, the value is the truncated operand.
    let exact = "(if (i32.ne (i32.trunc_f64_s (f64.const -2147483648.9)) (i32.const -2147483648)) (then unreachable))
                 (if (i64.ne (i64.trunc_f32_u (f32.const 16777216.0)) (i64.const 16777216)) (then unreachable))";
    let plugin = Plugin::handling(format!("{exact} i64.const {}", packed(OUTPUT_AT, OUTPUT.len())));
    let mut instance = plugin.compile(&Limits::default()).instantiate().unwrap();
    instance.init(&config()).unwrap();
    assert_eq!(instance.handle(&input(0)).unwrap(), Output::default());
}

/// A plugin whose `recon_handle` recurses `n` times through a function that
/// keeps `locals` `i64` locals live across its recursive call: frames larger
/// than an optimising compiler can keep in registers. Each is loaded from
/// its own address, so no compiler can merge them or compute them again
/// after the call.
fn recursive_with_locals(locals: usize, n: u32) -> Plugin {
    let set: String =
        (1..=locals).map(|l| format!("(local.set {l} (i64.load offset={} (i32.const 0)))", 8 * l)).collect();
    let sum: String = (1..=locals).map(|l| format!("(local.get {l}) i64.add ")).collect();
    let rec = format!(
        "(func $rec (param i32) (result i64) {}
           {set}
           (if (result i64) (local.get 0)
             (then (call $rec (i32.sub (local.get 0) (i32.const 1))))
             (else (i64.const 0)))
           {sum})",
        "(local i64)".repeat(locals)
    );
    Plugin {
        handle: format!("(drop (call $rec (i32.const {n}))) i64.const {}", packed(OUTPUT_AT, OUTPUT.len())),
        extra: Box::leak(rec.into_boxed_str()),
        ..Plugin::default()
    }
}

/// What `recon_handle` says when `plugin` is called once under `limits`.
fn answer(plugin: &Plugin, limits: &Limits) -> Result<Output, String> {
    let mut instance = plugin.compile(limits).instantiate().unwrap();
    instance.init(&config()).unwrap();
    instance.handle(&input(0)).map_err(|crash| crash.reason)
}

/// The largest `n` below `fails` for which `fits(n)` holds, by bisection:
/// `fits` holds up to some `n` and not beyond.
fn deepest(fails: u32, fits: impl Fn(u32) -> bool) -> u32 {
    let (mut fits_at, mut fails_at) = (0, fails);
    while fails_at - fits_at > 1 {
        let mid = (fits_at + fails_at) / 2;
        if fits(mid) { fits_at = mid } else { fails_at = mid }
    }
    fits_at
}

const STACK_BUDGET: &str = "test.wasm: recon_handle exhausted its stack budget (262144 bytes)";

/// Issue 20: Chromium's frames grew faster with live locals than
/// wasmtime's, so such recursion ran out of the browser's stack before the
/// depth limit that wasmtime reached. Charged by size, it stops at the same
/// call in every engine.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn recursion_with_larger_frames_exhausts_the_stack_budget_at_the_same_depth_in_every_engine() {
    // Frames of no live local but the metering's fit 2,000 times in the
    // budget; of 16 they do not.
    assert_eq!(
        answer(&recursive_with_locals(0, 1_000_000), &Limits::default()).unwrap_err(),
        "test.wasm: recon_handle exceeded the call depth limit (2000; the scenario's limits.plugins.maxCallDepth raises it, up to 100000)"
    );
    assert_eq!(answer(&recursive_with_locals(16, 1_000_000), &Limits::default()).unwrap_err(), STACK_BUDGET);
    // The deepest recursion that fits, found by bisection, is the same
    // number in every engine (the charge is the module's, not the engine's).
    let fits_at = deepest(2_000, |n| answer(&recursive_with_locals(16, n), &Limits::default()).is_ok());
    assert_eq!(fits_at, 1_022, "recon_handle and {} frames of $rec fit in 262,144 bytes", fits_at + 1);
}

/// `recon_handle` calls `$shape` with `argument`: a function of one frame
/// shape that recurses without end.
fn recursing(shape: String, argument: &str) -> Plugin {
    Plugin {
        handle: format!("(drop (call $shape {argument})) unreachable"),
        extra: Box::leak(shape.into_boxed_str()),
        ..Plugin::default()
    }
}

/// Every way to make a frame large (its header, live scalar or vector
/// locals, a deep operand stack, many parameters), recursing without a
/// depth limit: the stack budget stops each before the engine's stack, and
/// the engine stays usable.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn every_frame_shape_exhausts_the_stack_budget_before_the_engines_stack() {
    let limits = Limits { max_call_depth: u32::MAX, ..Limits::default() };
    let vectors = |n: usize| {
        let set: String = (0..n).map(|l| format!("(local.set {} (i32x4.splat (local.get 0)))", l + 1)).collect();
        let sum: String = (0..n).map(|l| format!("(local.get {}) i32x4.add ", l + 1)).collect();
        format!(
            "(func $shape (param i32) (result v128) {} {set}
               (call $shape (i32.add (local.get 0) (i32.const 1))) {sum})",
            "(local v128)".repeat(n)
        )
    };
    let operands = |n: usize| {
        let push: String = (0..n).map(|k| format!("local.get 0 i32.const {} i32.mul ", k + 3)).collect();
        format!(
            "(func $shape (param i32) (result i32) {push}
               (call $shape (i32.add (local.get 0) (i32.const 1))) {})",
            "i32.add ".repeat(n)
        )
    };
    let params = |n: usize| {
        let args: String = (0..n).map(|k| format!("(local.get {k}) ")).collect();
        format!("(func $shape (param {}) (result i32) (call $shape {args}))", "i32 ".repeat(n))
    };
    let shapes = [
        ("the smallest frame", "(func $shape (result i32) (call $shape))".to_owned(), "".to_owned()),
        (
            "256 live i64 locals",
            recursive_with_locals(256, u32::MAX).extra.replace("$rec", "$shape"),
            "(i32.const -1)".into(),
        ),
        ("256 live v128 locals", vectors(256), "(i32.const 0)".into()),
        ("1,000 operands", operands(1_000), "(i32.const 0)".into()),
        ("200 parameters", params(200), "(i32.const 0) ".repeat(200)),
    ];
    for (shape, function, argument) in shapes {
        assert_eq!(answer(&recursing(function, &argument), &limits).unwrap_err(), STACK_BUDGET, "{shape}");
    }
    // The engine is unharmed: a shallow recursion still runs.
    assert_eq!(answer(&recursive_with_locals(16, 10), &limits), Ok(Output::default()));
}

/// With the budget lifted, the engine's own stack runs out: still a crash of
/// the instance alone, worded the same in every engine, and the engine stays
/// usable. How deep it gets measures the engine's stack in frames the budget
/// charges about what V8 reserves for them (1,024 live `i64` locals, about
/// 8 KiB): it holds the budget and half as much again (the largest frame a
/// module may have is half the budget), with the host's own frames below.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn the_engines_own_stack_holds_the_budget_and_half_as_much_again() {
    let budget = Limits { max_call_depth: u32::MAX, ..Limits::default() };
    let lifted = Limits { stack_bytes: u32::MAX, ..budget };
    let in_budget = deepest(1_000, |n| answer(&recursive_with_locals(1_024, n), &budget).is_ok());
    let in_engine = deepest(1_000, |n| answer(&recursive_with_locals(1_024, n), &lifted).is_ok());
    assert_eq!(
        answer(&recursive_with_locals(1_024, in_engine + 1), &lifted).unwrap_err(),
        "test.wasm: recon_handle trapped: exhausted the engine's stack"
    );
    assert!(in_engine * 2 >= in_budget * 3, "the engine's stack holds {in_engine} frames, the budget {in_budget}");
    assert_eq!(answer(&recursive_with_locals(16, 10), &lifted), Ok(Output::default()), "the engine is unharmed");
}

/// The worst case for an engine's stack: frames whose charge is about what
/// the engines reserve for them (live `i64` locals, 8 bytes a slot in V8 as
/// in the charge) fill the budget to its brim, and the next call is to the
/// largest frame a module may have, which the engine reserves before its
/// first instruction can check the budget. That fits too, with the host's
/// own frames below, in every engine.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn the_largest_frame_fits_on_top_of_a_full_stack_budget() {
    let limits = Limits { max_call_depth: u32::MAX, ..Limits::default() };
    // 16,360 i64 locals: a frame just under MAX_FRAME_BYTES once metered.
    let largest = 16_360;
    let live = 256;
    let set: String = (0..live).map(|l| format!("(local.set {} (i64.extend_i32_u (local.get 0)))", l + 2)).collect();
    let sum: String = (0..live).map(|l| format!("(local.get {}) i64.add ", l + 2)).collect();
    let functions = format!(
        "(func $fill (param i32 i32) (result i64) (local {}) {set}
           (if (result i64) (local.get 0)
             (then (call $fill (i32.sub (local.get 0) (i32.const 1)) (local.get 1)))
             (else (if (result i64) (local.get 1) (then (call $largest)) (else (i64.const 0)))))
           {sum})
         (func $largest (result i64) (local {}) (local.get {}))",
        "i64 ".repeat(live),
        "i64 ".repeat(largest),
        largest - 1
    );
    let functions: &'static str = Box::leak(functions.into_boxed_str());
    let plugin = |n: u32, then_largest: bool| Plugin {
        handle: format!(
            "(drop (call $fill (i32.const {n}) (i32.const {}))) i64.const {}",
            i32::from(then_largest),
            packed(OUTPUT_AT, OUTPUT.len())
        ),
        extra: functions,
        ..Plugin::default()
    };
    let fits_at = deepest(1_000, |n| answer(&plugin(n, false), &limits).is_ok());
    assert_eq!(answer(&plugin(fits_at + 1, false), &limits).unwrap_err(), STACK_BUDGET);
    assert!(fits_at > 100, "frames of 256 locals, about 2 KiB: {fits_at}");
    // Then the largest frame on top: the budget says no, not the engine.
    assert_eq!(answer(&plugin(fits_at, true), &limits).unwrap_err(), STACK_BUDGET);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn start_gives_an_instance_that_crashes_when_instantiation_failed() {
    let compiled = Plugin { abi_version: 2, ..Plugin::default() }.compile(&Limits::default());
    let reason = "test.wasm: recon_abi_version returned 2, but this host speaks ABI version 1";
    assert_eq!(compiled.instantiate().err().unwrap().reason, reason);
    let mut failed = compiled.start();
    assert_eq!(failed.init(&config()).unwrap_err().reason, reason);
    assert_eq!(failed.handle(&input(0)).unwrap_err().reason, reason);
    // A plugin that instantiates starts as itself.
    let mut started = Plugin::default().compile(&Limits::default()).start();
    assert_eq!(started.init(&config()).unwrap().name, "test");
    assert_eq!(started.handle(&input(0)).unwrap(), Output::default());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn the_output_limit_applies_to_the_manifest_too_and_the_action_limit_is_inclusive() {
    let limits = Limits { max_output_bytes: MANIFEST.len() as u64 - 1, ..Limits::default() };
    let mut instance = Plugin::default().compile(&limits).instantiate().unwrap();
    let crash = instance.init(&config()).unwrap_err();
    let expected = format!("test.wasm: recon_init returned a manifest of {} bytes, above the limit of", MANIFEST.len());
    assert!(crash.reason.starts_with(&expected), "{crash}");
    // Exactly at the limits is fine.
    let output = r#"{"actions":[{"type":"requeueAfter","key":"a","afterMs":1}]}"#;
    let limits = Limits { max_output_bytes: output.len() as u64, max_actions_per_call: 1, ..Limits::default() };
    let plugin =
        Plugin { output, handle: format!("i64.const {}", packed(OUTPUT_AT, output.len())), ..Plugin::default() };
    let mut instance = plugin.compile(&limits).instantiate().unwrap();
    instance.init(&config()).unwrap();
    assert_eq!(instance.handle(&input(0)).unwrap().actions.len(), 1);
}

/// A plugin that logs `panic` (at `JUNK_AT`), then runs `then`.
fn panicking(panic: &'static str, then: &str) -> Plugin {
    Plugin {
        junk: panic,
        handle: format!("(call $log (i32.const {JUNK_AT}) (i32.const {})) {then}", panic.len()),
        ..Plugin::default()
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_trap_right_after_a_panic_line_is_worded_as_the_panic() {
    // Issue 20: a panicking Rust plugin crashed with only "executed an
    // unreachable instruction".
    let line = "panicked at src/lib.rs:12:5: the   pod has  no node";
    let mut instance = panicking(line, "unreachable").compile(&Limits::default()).instantiate().unwrap();
    instance.init(&config()).unwrap();
    let crash = instance.handle(&input(0)).unwrap_err();
    assert_eq!(crash.reason, "test.wasm: recon_handle panicked at src/lib.rs:12:5: the pod has no node");
    assert_eq!(instance.take_logs(), [line]);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_panic_line_words_the_crash_even_past_the_log_limit() {
    let line = "panicked at src/lib.rs:1:1: late";
    let spam = format!(
        "(local.set $i (i32.const 1500))
         (loop $again
           (call $log (i32.const {MANIFEST_AT}) (i32.const 4))
           (br_if $again (local.tee $i (i32.sub (local.get $i) (i32.const 1)))))"
    );
    let plugin = Plugin { handle: format!("{spam} {}", panicking(line, "unreachable").handle), ..panicking(line, "") };
    let mut instance = plugin.compile(&Limits::default()).instantiate().unwrap();
    instance.init(&config()).unwrap();
    let crash = instance.handle(&input(0)).unwrap_err();
    assert_eq!(crash.reason, "test.wasm: recon_handle panicked at src/lib.rs:1:1: late");
    let logs = instance.take_logs();
    assert_eq!(logs.len(), 1_001);
    assert_eq!(logs[1_000], "(501 more log lines dropped)");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_panic_line_words_only_a_plain_trap_that_follows_it_at_once() {
    let line = "panicked at src/lib.rs:12:5: boom";
    let cases = [
        // Another line after it: the panic was not the last word.
        (
            format!("(call $log (i32.const {MANIFEST_AT}) (i32.const 4)) unreachable"),
            "trapped: executed an unreachable instruction",
        ),
        // Fuel and the depth limit are worded as themselves.
        (
            "(loop (br 0)) unreachable".to_owned(),
            "ran out of fuel (budget 1000000000 per call; the scenario's limits.plugins.fuelPerCall raises it, up to 100000000000)",
        ),
        // Another trap is that trap.
        (
            "(drop (i32.div_u (i32.const 1) (i32.const 0))) unreachable".to_owned(),
            "trapped: divided an integer by zero",
        ),
    ];
    for (then, reason) in cases {
        let mut instance = panicking(line, &then).compile(&Limits::default()).instantiate().unwrap();
        instance.init(&config()).unwrap();
        let crash = instance.handle(&input(0)).unwrap_err();
        assert_eq!(crash.reason, format!("test.wasm: recon_handle {reason}"), "after {then}");
    }
}
