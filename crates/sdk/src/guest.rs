//! The guest side of the plugin ABI (`docs/plugin-abi.md`): what
//! [`export_controller!`](crate::export_controller) connects a controller to.
//!
//! The ABI passes bytes through the module's linear memory: the host asks
//! [`Guest::alloc`] for a buffer, writes a JSON document into it and calls
//! `recon_init` or `recon_handle` with its address; the plugin answers with
//! the address and length of a JSON document of its own. [`Guest`] does all
//! of that in safe Rust, so it can be tested natively; the wasm32-only
//! functions at the bottom (`alloc`, `init`, `handle`) are the thin
//! layer the macro's exports call, with the one [`Guest`] of the instance.
//!
//! The manifest the glue returns asks the host to leave out of watch
//! events what the plugin already holds (`omitUnchanged`, in
//! `docs/plugin-abi.md`): an object's `spec` or `status` equal to those
//! of the last version its watch delivered. The glue keeps that last
//! version's parts (a [`Delivered`], shared, not copied) and puts them
//! back before the controller sees the event, so a controller never sees
//! a partial object.
//!
//! # Why this is sound
//!
//! The glue contains no `unsafe` code and never turns an integer from the
//! host into a pointer:
//!
//! - An input buffer is a `Vec<u8>` that [`Guest`] keeps in a table keyed by
//!   its address. Its pointer is *exposed* when the address is handed to the
//!   host, and the host writes into it while no Rust code runs and no Rust
//!   reference to it is live, as foreign code writes into a buffer it was
//!   given. When the host passes an address back, the buffer is *looked up*
//!   in the table: an unknown address, or a length beyond the buffer, is a
//!   panic, never a read of memory the glue does not own. Any bytes are
//!   valid `u8`s.
//! - The output is a `Vec<u8>` kept in [`Guest`] until the next call, so its
//!   address stays valid while the host copies it out, as the ABI requires.
//! - A document that does not decode is a panic too. On wasm32 a panic is an
//!   abort, which is a trap: the host crashes this instance and restarts it,
//!   which is the documented behaviour for a plugin that cannot go on.
//!
//! Only three things need `unsafe`, all outside this module's logic: the
//! `#[unsafe(no_mangle)]` attributes the macro puts on the exports (a symbol
//! name is global), the declaration of the `recon.log` import behind
//! [`log`], whose one call passes the address and length of a
//! live `&str`, and [`memcmp`], which the macro makes the module's own
//! and which turns C's pointer and length into slices for the safe
//! [`compare_bytes`].

use std::collections::BTreeMap;

use recon_abi::{ABI_VERSION, ComponentConfig, Controller, Delivered, Input, SentContainers, WireInput};

/// The largest input or output buffer the glue keeps for the next call:
/// a plugin's first list, or its answer to it, can be tens of megabytes,
/// not worth holding for the calls after.
const KEPT_BYTES: usize = 64 * 1024;

/// Builds the instance's controller; the macro passes a function that
/// evaluates the expression it was given.
pub type Make = fn() -> Box<dyn Controller>;

/// The state of one plugin instance: its controller, the input buffers the
/// host has asked for and not yet handed back, the last output, and what
/// the host sent that it may leave out of later inputs.
#[derive(Default)]
pub struct Guest {
    controller: Option<Box<dyn Controller>>,
    inputs: BTreeMap<usize, Vec<u8>>,
    /// The last call's input buffer, kept for the next one if it is small:
    /// a call then allocates no buffer for its input.
    spare: Vec<u8>,
    output: Vec<u8>,
    kept: Kept,
}

/// What the glue keeps of what the host sent, to put back what the host
/// leaves out of later inputs (see [`init_json`]).
#[derive(Debug, Default)]
pub struct Kept {
    /// The parts of every object each watch delivered (`omitUnchanged`);
    /// `None` if the controller keeps no such table.
    pub delivered: Option<Delivered>,
    /// A node agent's last list of containers (`containerChanges`);
    /// `None` for other components.
    pub containers: Option<SentContainers>,
}

impl std::fmt::Debug for Guest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guest")
            .field("initialised", &self.controller.is_some())
            .field("pending_inputs", &self.inputs.len())
            .field("output_len", &self.output.len())
            .finish()
    }
}

impl Guest {
    /// No controller yet (it is built by the first [`Guest::init`]), no buffers.
    pub fn new() -> Guest {
        Guest::default()
    }

    /// `recon_alloc`: a zeroed buffer of `len` bytes for the host to fill;
    /// returns its address, or `None` if memory is exhausted (the export
    /// returns `0` then, as the ABI says).
    pub fn alloc(&mut self, len: usize) -> Option<usize> {
        let mut buffer = std::mem::take(&mut self.spare);
        buffer.clear();
        // At least one byte, so that every live buffer has its own address
        // (an empty Vec's dangling pointer would be shared).
        let size = len.max(1);
        buffer.try_reserve_exact(size).ok()?;
        buffer.resize(size, 0);
        let address = buffer.as_mut_ptr().expose_provenance();
        self.inputs.insert(address, buffer);
        Some(address)
    }

    /// The buffer at `address`, as the host sees it: what a native test
    /// writes into to play the host's part.
    pub fn input_mut(&mut self, address: usize) -> Option<&mut [u8]> {
        self.inputs.get_mut(&address).map(Vec::as_mut_slice)
    }

    /// How many buffers the host has asked for and not handed back.
    pub fn pending_inputs(&self) -> usize {
        self.inputs.len()
    }

    /// `recon_init`: builds the controller on the first call (with `make`),
    /// passes it the `ComponentConfig` at `address` and returns the encoded
    /// `Manifest`. Panics if the address is not a buffer from
    /// [`Guest::alloc`] or the document does not decode.
    pub fn init(&mut self, make: Make, address: usize, len: usize) -> &[u8] {
        let input = self.take_input(address, len, "recon_init");
        let mut output = self.take_output();
        let controller = self.controller.get_or_insert_with(make);
        init_json(controller.as_mut(), &mut self.kept, &input, &mut output);
        self.output = output;
        self.keep_spare(input);
        &self.output
    }

    /// `recon_handle`: passes the `Input` at `address` to the controller and
    /// returns the encoded `Output`. Panics before [`Guest::init`], if the
    /// address is not a buffer from [`Guest::alloc`], or if the document does
    /// not decode.
    pub fn handle(&mut self, address: usize, len: usize) -> &[u8] {
        let input = self.take_input(address, len, "recon_handle");
        let mut output = self.take_output();
        let Some(controller) = self.controller.as_mut() else {
            panic!("recon_handle was called before recon_init");
        };
        handle_json(controller.as_mut(), &mut self.kept, &input, &mut output);
        self.output = output;
        self.keep_spare(input);
        &self.output
    }

    /// Keeps a call's input buffer for the next call's, unless it is large.
    fn keep_spare(&mut self, input: Vec<u8>) {
        if input.capacity() <= KEPT_BYTES {
            self.spare = input;
        }
    }

    /// The buffer for a new call's output: the last one's (the host has
    /// copied it out already), unless it grew large.
    fn take_output(&mut self) -> Vec<u8> {
        let output = std::mem::take(&mut self.output);
        if output.capacity() > KEPT_BYTES { Vec::new() } else { output }
    }

    /// Removes the buffer at `address` from the table: it belongs to the
    /// call now, and is freed when the call is done.
    fn take_input(&mut self, address: usize, len: usize, export: &str) -> Vec<u8> {
        let Some(mut buffer) = self.inputs.remove(&address) else {
            panic!("{export}: address {address} is not a buffer from recon_alloc");
        };
        if len > buffer.len() {
            panic!("{export}: length {len} exceeds the {} bytes allocated at {address}", buffer.len());
        }
        buffer.truncate(len);
        buffer
    }
}

/// Decodes a `ComponentConfig`, calls [`Controller::init`] and encodes the
/// `Manifest` into `output` (emptied first): the JSON round trip of
/// `recon_init`. Unless the controller says otherwise
/// ([`Controller::omit_unchanged`]), the manifest asks the host to leave
/// unchanged parts out of watch events (`omitUnchanged`), and [`handle_json`]
/// puts them back from `kept.delivered`, which starts empty here; otherwise
/// it is `None` and nothing is kept. A node agent's manifest also asks to
/// be sent what changed in its containers rather than the whole list
/// (`containerChanges`), and [`handle_json`] rebuilds the list from
/// `kept.containers`. Panics if the bytes do not decode.
pub fn init_json(controller: &mut dyn Controller, kept: &mut Kept, input: &[u8], output: &mut Vec<u8>) {
    let config: ComponentConfig = decode("recon_init", "ComponentConfig", input);
    let mut manifest = controller.init(&config);
    manifest.omit_unchanged = controller.omit_unchanged();
    manifest.container_changes = manifest.node_agent;
    *kept = Kept {
        delivered: manifest.omit_unchanged.then(Delivered::new),
        containers: manifest.container_changes.then(SentContainers::new),
    };
    output.clear();
    serde_json::to_writer(output, &manifest).expect("a Manifest always encodes as JSON");
}

/// Decodes an `Input`, puts back into its watch events what the host left
/// out and rebuilds its containers from what changed (from `kept`, which it
/// then brings up to date), calls [`Controller::handle`] and encodes the
/// `Output` into `output` (emptied first; a plugin's glue keeps one buffer
/// for every call's, so encoding allocates only when an output is larger
/// than any before): the JSON round trip of `recon_handle`. Panics if the
/// bytes do not decode, if an event leaves out a part of an object its
/// watch never delivered, or if the containers' changes do not fit the
/// last list.
pub fn handle_json(controller: &mut dyn Controller, kept: &mut Kept, input: &[u8], output: &mut Vec<u8>) {
    let wire: WireInput = decode("recon_handle", "Input", input);
    let containers = match &mut kept.containers {
        Some(sent) => {
            sent.receive(wire.containers, wire.container_changes).unwrap_or_else(|e| panic!("recon_handle: {e}"))
        }
        None if wire.container_changes.is_some() => {
            panic!("recon_handle: containerChanges, which the manifest did not ask for")
        }
        None => wire.containers,
    };
    let mut input = Input { time_ms: wire.time_ms, events: wire.events, containers };
    if let Some(delivered) = &mut kept.delivered {
        for event in &mut input.events {
            delivered.receive(event).unwrap_or_else(|e| panic!("recon_handle: {e}"));
        }
    }
    let answer = controller.handle(&input);
    output.clear();
    serde_json::to_writer(output, &answer).expect("an Output always encodes as JSON");
}

/// Decodes the JSON `bytes` that `export` was given as a `what`; panics
/// if they do not decode. The text is checked as UTF-8 once, as a whole:
/// `serde_json`'s reader over bytes checks each string on its own, which
/// cost about a tenth of a kubelet call under Wasm.
fn decode<T: serde::de::DeserializeOwned>(export: &str, what: &str, bytes: &[u8]) -> T {
    let text = std::str::from_utf8(bytes).unwrap_or_else(|e| panic!("{export}: the {what} is not UTF-8: {e}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{export}: the {what} does not decode: {e}"))
}

/// The `i64` that `recon_init` and `recon_handle` return: `(address << 32) | len`.
pub fn pack(address: u32, len: u32) -> i64 {
    ((u64::from(address) << 32) | u64::from(len)) as i64
}

/// What `recon_abi_version` returns.
pub fn abi_version() -> i32 {
    ABI_VERSION as i32
}

#[cfg(target_arch = "wasm32")]
mod instance {
    use std::cell::RefCell;

    use super::{Guest, Make, pack};

    thread_local! {
        // wasm32 without the atomics feature has one thread, so this is one
        // plain static per module instance; RefCell catches reentrancy.
        static GUEST: RefCell<Guest> = RefCell::new(Guest::new());
    }

    /// A wasm32 address as the ABI's `i32`, and back.
    fn to_i32(address: usize) -> i32 {
        address as u32 as i32
    }

    fn from_i32(value: i32) -> usize {
        value as u32 as usize
    }

    fn packed(output: &[u8]) -> i64 {
        pack(output.as_ptr().expose_provenance() as u32, output.len() as u32)
    }

    /// The `recon_alloc` export.
    pub fn alloc(len: i32) -> i32 {
        let Ok(len) = usize::try_from(len) else { return 0 };
        GUEST.with_borrow_mut(|guest| guest.alloc(len)).map_or(0, to_i32)
    }

    /// The `recon_init` export.
    pub fn init(make: Make, address: i32, len: i32) -> i64 {
        // A panic traps without a word on wasm32; say why in the
        // component's log first, so the host can show the reason. Once:
        // an instance is initialised once, but a hook set twice would
        // drop the first for nothing.
        static HOOK: std::sync::Once = std::sync::Once::new();
        HOOK.call_once(|| std::panic::set_hook(Box::new(|info| crate::log(&super::panic_line(info)))));
        super::LOG_TO_HOST.set(Some(super::import::log));
        GUEST.with_borrow_mut(|guest| packed(guest.init(make, from_i32(address), from_i32(len))))
    }

    /// The `recon_handle` export.
    pub fn handle(address: i32, len: i32) -> i64 {
        GUEST.with_borrow_mut(|guest| packed(guest.handle(from_i32(address), from_i32(len))))
    }
}

#[cfg(target_arch = "wasm32")]
pub use instance::{alloc, handle, init};

/// The line the SDK's panic hook logs before a wasm32 plugin traps, and
/// the host's crash reason carries: `panicked at src/lib.rs:12:5: message`
/// (on one line for the reason; the log keeps the message as it was).
pub fn panic_line(info: &std::panic::PanicHookInfo<'_>) -> String {
    let location = info.location().map_or_else(|| "an unknown location".to_owned(), ToString::to_string);
    let message = info.payload_as_str().unwrap_or("a panic with a non-string payload");
    format!("panicked at {location}: {message}{}", instead_of(message))
}

/// What a plugin should use instead, when a panic is the standard
/// library's (or tokio's) answer to something the sandbox does not have;
/// else empty. A plugin has no clock, no threads and no runtime of its
/// own: its time is the virtual time each call brings.
pub fn instead_of(message: &str) -> &'static str {
    if message.contains("time not implemented on this platform") {
        " (a plugin has no clock: use the virtual time of its input, Input::time_ms; \
         with kube, kube::recon::now_ms, and kube::recon::sleep or Action::requeue to wait)"
    } else if message.contains("must be called from the context of a Tokio") {
        " (a plugin has no tokio runtime: with kube, wait with kube::recon::sleep or Action::requeue; \
         futures run on the plugin's own executor)"
    } else if message.contains("failed to spawn thread") {
        " (a plugin has no threads: with kube, every future runs on the plugin's own executor)"
    } else {
        ""
    }
}

/// Writes a line to the component's log.
///
/// In a Wasm plugin (once its `recon_init` export has run) the line goes to
/// the host's `recon.log` import, which the host bounds and puts in the
/// trace. Linked natively, it is kept for [`capture_logs`] when a call is
/// being captured, and dropped otherwise.
///
/// The import is reached only through `recon_init`'s switch, never from
/// this function directly, so a wasm32 program that links a controller
/// without exporting it (the playground's worker) imports nothing: a
/// `recon.log` import there could not be satisfied and would keep the
/// whole program from loading.
pub fn log(line: &str) {
    let captured =
        CAPTURED.with_borrow_mut(|captured| captured.as_mut().map(|lines| lines.push(line.to_owned())).is_some());
    if let Some(to_host) = LOG_TO_HOST.get().filter(|_| !captured) {
        to_host(line);
    }
}

/// Runs `call` and returns what it logged with [`log`], for an adapter that
/// links a controller natively and reports its log as the host reports a
/// Wasm plugin's (`recon_abi::Instance::take_logs`). Calls nest: the inner
/// one takes its own lines.
pub fn capture_logs<T>(call: impl FnOnce() -> T) -> (T, Vec<String>) {
    let outer = CAPTURED.with_borrow_mut(|captured| captured.replace(Vec::new()));
    let result = call();
    let lines = CAPTURED.with_borrow_mut(|captured| std::mem::replace(captured, outer)).unwrap_or_default();
    (result, lines)
}

thread_local! {
    /// Lines logged inside [`capture_logs`], innermost call's.
    static CAPTURED: std::cell::RefCell<Option<Vec<String>>> = const { std::cell::RefCell::new(None) };
    /// Set by the `recon_init` export: this module is a plugin and its host
    /// provides `recon.log`. A function pointer, so that only `recon_init`
    /// names the import: a program without the export (the worker, a test
    /// that links controllers natively) keeps none, optimised or not.
    static LOG_TO_HOST: std::cell::Cell<Option<fn(&str)>> = const { std::cell::Cell::new(None) };
}

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code, reason = "declaring and calling the host's `recon.log` import is FFI")]
mod import {
    #[link(wasm_import_module = "recon")]
    unsafe extern "C" {
        // The import is `recon.log`; the Rust name differs so that it can
        // never be confused with libm's `log`.
        #[link_name = "log"]
        fn recon_log(address: *const u8, len: usize);
    }

    pub fn log(line: &str) {
        // SAFETY: the host only reads `line.len()` bytes at `line.as_ptr()`
        // in this module's memory during the call, and `line` keeps them
        // alive and initialised until it returns.
        unsafe { recon_log(line.as_ptr(), line.len()) }
    }
}

/// Compares two byte strings of one length as C's `memcmp` does:
/// negative, zero or positive as `a` sorts before, with or after `b`,
/// byte by byte (unsigned).
///
/// Eight bytes at a time. Rust compares every string and byte slice (a
/// map's keys, `==` on names) through `memcmp`, and the standard
/// library's for wasm32 takes one byte per loop iteration; Recon meters
/// every iteration of a plugin's loops, so comparing a 40-byte name cost
/// forty metered iterations. [`export_controller!`](crate::export_controller)
/// makes this the plugin's `memcmp` and `bcmp`.
///
/// # Panics
/// If the two differ in length.
pub fn compare_bytes(a: &[u8], b: &[u8]) -> i32 {
    assert_eq!(a.len(), b.len(), "compare_bytes compares strings of one length");
    let (mut a_words, mut b_words) = (a.chunks_exact(8), b.chunks_exact(8));
    for (x, y) in (&mut a_words).zip(&mut b_words) {
        let (x, y) = (word(x), word(y));
        if x != y {
            // Little-endian words: the first byte that differs is the
            // lowest set bit of the difference.
            let byte = (x ^ y).trailing_zeros() / 8;
            return i32::from((x >> (byte * 8)) as u8) - i32::from((y >> (byte * 8)) as u8);
        }
    }
    for (x, y) in a_words.remainder().iter().zip(b_words.remainder()) {
        if x != y {
            return i32::from(*x) - i32::from(*y);
        }
    }
    0
}

/// Eight bytes as a little-endian word.
fn word(bytes: &[u8]) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(bytes);
    u64::from_le_bytes(word)
}

/// `memcmp` over [`compare_bytes`], for the export macro.
///
/// # Safety
/// C's contract: unless `len` is 0, `a` and `b` each point to `len`
/// readable bytes that nothing writes during the call.
#[allow(unsafe_code, reason = "memcmp's C signature takes raw pointers")]
pub unsafe fn memcmp(a: *const u8, b: *const u8, len: usize) -> i32 {
    if len == 0 {
        // Either may be null or dangling then.
        return 0;
    }
    // SAFETY: the caller's contract above.
    let (a, b) = unsafe { (std::slice::from_raw_parts(a, len), std::slice::from_raw_parts(b, len)) };
    compare_bytes(a, b)
}

/// Exports a controller as a Recon plugin: `recon_abi_version`,
/// `recon_alloc`, `recon_init` and `recon_handle`, exactly as
/// `docs/plugin-abi.md` describes (rustc exports `memory` itself).
///
/// The argument is an expression that builds the controller; it is
/// evaluated once per module instance, on the first `recon_init`. Put the
/// macro at the root of a `cdylib` crate; it expands to nothing unless the
/// target is wasm32, so the same crate also links natively.
///
/// ```
/// use recon_abi::{ComponentConfig, Controller, Input, Manifest, Output};
///
/// #[derive(Default)]
/// pub struct Idle;
///
/// impl Controller for Idle {
///     fn init(&mut self, _config: &ComponentConfig) -> Manifest {
///         Manifest { name: "idle".into(), abi_version: recon_abi::ABI_VERSION, ..Manifest::default() }
///     }
///
///     fn handle(&mut self, _input: &Input) -> Output {
///         Output::default()
///     }
/// }
///
/// recon_sdk::export_controller!(Idle::default());
/// ```
///
/// A plugin crate that other plugin crates (or the catalog) link as a
/// library should expand the macro behind a default cargo feature that they
/// turn off (the built-ins call it `export`), so that only one set of
/// exports ends up in any one module.
#[macro_export]
macro_rules! export_controller {
    ($make:expr $(,)?) => {
        #[cfg(target_arch = "wasm32")]
        #[doc(hidden)]
        fn __recon_make_controller() -> ::std::boxed::Box<dyn $crate::abi::Controller> {
            ::std::boxed::Box::new($make)
        }

        // A module of its own: the exports land in their own codegen unit, so
        // a plugin that links this crate as a library does not pull them in.
        #[cfg(target_arch = "wasm32")]
        #[doc(hidden)]
        #[allow(unsafe_code, reason = "the ABI's export names must be unmangled symbols")]
        mod __recon_exports {
            /// `() -> i32`: the ABI version.
            #[unsafe(no_mangle)]
            pub extern "C" fn recon_abi_version() -> i32 {
                $crate::guest::abi_version()
            }

            /// `(len: i32) -> i32`: a buffer for the host to fill, or 0.
            #[unsafe(no_mangle)]
            pub extern "C" fn recon_alloc(len: i32) -> i32 {
                $crate::guest::alloc(len)
            }

            /// `(ptr: i32, len: i32) -> i64`: ComponentConfig in, Manifest out.
            #[unsafe(no_mangle)]
            pub extern "C" fn recon_init(ptr: i32, len: i32) -> i64 {
                $crate::guest::init(super::__recon_make_controller, ptr, len)
            }

            /// `(ptr: i32, len: i32) -> i64`: Input in, Output out.
            #[unsafe(no_mangle)]
            pub extern "C" fn recon_handle(ptr: i32, len: i32) -> i64 {
                $crate::guest::handle(ptr, len)
            }

            /// The module's `memcmp`, in place of the standard library's,
            /// which compares a byte per metered loop iteration
            /// ([`compare_bytes`]($crate::guest::compare_bytes)).
            ///
            /// # Safety
            /// C's contract (`$crate::guest::memcmp`).
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, len: usize) -> i32 {
                // SAFETY: forwarded to the caller.
                unsafe { $crate::guest::memcmp(a, b, len) }
            }

            /// `bcmp`, which LLVM calls where only equality matters: the same.
            ///
            /// # Safety
            /// As for `memcmp`.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, len: usize) -> i32 {
                // SAFETY: forwarded to the caller.
                unsafe { $crate::guest::memcmp(a, b, len) }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{input, listed, pod};
    use recon_abi::{Action, ListMode, Manifest, Output, WatchSpec};

    #[test]
    fn a_panic_for_what_the_sandbox_lacks_says_what_to_use_instead() {
        // What `Instant::now()` panics with on wasm32-unknown-unknown.
        assert!(instead_of("time not implemented on this platform").contains("no clock"));
        assert!(
            instead_of("there is no reactor running, must be called from the context of a Tokio 1.x runtime")
                .contains("kube::recon::sleep")
        );
        assert_eq!(instead_of("the pod web-0 has no node"), "");
    }

    #[test]
    fn captured_calls_take_their_own_lines_and_nothing_is_kept_outside_one() {
        log("before: dropped natively");
        let (((), inner), outer) = capture_logs(|| {
            log("outer 1");
            let inner = capture_logs(|| log("inner"));
            log("outer 2");
            inner
        });
        assert_eq!(inner, ["inner"]);
        assert_eq!(outer, ["outer 1", "outer 2"]);
        assert_eq!(capture_logs(|| ()).1, Vec::<String>::new());
    }

    #[test]
    fn the_panic_line_names_the_location_and_the_message_as_the_host_expects() {
        // Issue 20: the line the hook logs is what the crash reason carries.
        let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let shared = seen.clone();
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| *shared.lock().unwrap() = panic_line(info)));
        let line = line!() + 1;
        let _ = std::panic::catch_unwind(|| panic!("the pod {} has no node", "web-0"));
        std::panic::set_hook(previous);
        let seen = seen.lock().unwrap();
        assert!(seen.starts_with(&format!("panicked at {}:{line}:", file!())), "{seen}");
        assert!(seen.ends_with(": the pod web-0 has no node"), "{seen}");
    }

    /// Echoes the names of the pods it is given as creates, to see data
    /// cross the glue both ways.
    #[derive(Default)]
    struct Echo;

    impl Controller for Echo {
        fn init(&mut self, config: &ComponentConfig) -> Manifest {
            Manifest {
                name: config.name.clone(),
                abi_version: ABI_VERSION,
                watches: vec![WatchSpec { kind: "Pod".into(), ..WatchSpec::default() }],
                list_mode: ListMode::Quorum,
                ..Manifest::default()
            }
        }

        fn handle(&mut self, input: &Input) -> Output {
            let actions = input
                .events
                .iter()
                .filter_map(|e| match e {
                    recon_abi::InputEvent::Listed { objects, .. } => Some(objects.clone()),
                    recon_abi::InputEvent::Watch { event, .. } => Some(vec![event.object.clone()]),
                    _ => None,
                })
                .flatten()
                .map(|object| Action::Create { object: std::sync::Arc::unwrap_or_clone(object), dry_run: false })
                .collect();
            Output::new(actions)
        }
    }

    /// What a controller that keeps the default table starts with.
    fn kept() -> Kept {
        Kept { delivered: Some(Delivered::new()), containers: None }
    }

    /// A node agent that stops every container it is told runs: what it
    /// sees of the containers, through the glue.
    struct StopAll;

    impl Controller for StopAll {
        fn init(&mut self, config: &ComponentConfig) -> Manifest {
            Manifest { node_agent: true, ..Echo.init(config) }
        }

        fn handle(&mut self, input: &Input) -> Output {
            let running = input.containers.as_deref().unwrap_or_default();
            Output::new(running.iter().map(|c| Action::StopContainer { pod: c.pod.clone() }).collect())
        }
    }

    /// A node agent asks for what changed in its containers, and its
    /// controller sees every list whole: the first as sent, the next ones
    /// rebuilt from the changes; changes the manifest did not ask for, or
    /// that do not fit, trap the instance.
    #[test]
    fn a_node_agent_sees_every_list_of_containers_whole() {
        let (mut kept, mut manifest) = (Kept::default(), Vec::new());
        init_json(&mut StopAll, &mut kept, br#"{"name":"kubelet","node":"node-1"}"#, &mut manifest);
        let manifest: Manifest = serde_json::from_slice(&manifest).unwrap();
        assert!(manifest.node_agent && manifest.container_changes);
        let stopped = |kept: &mut Kept, input: &str| -> Vec<String> {
            let mut output = Vec::new();
            handle_json(&mut StopAll, kept, input.as_bytes(), &mut output);
            let output: Output = serde_json::from_slice(&output).unwrap();
            output
                .actions
                .iter()
                .map(|a| match a {
                    Action::StopContainer { pod } => pod.name.clone(),
                    other => panic!("{other:?}"),
                })
                .collect()
        };
        let a = r#"{"pod":{"namespace":"default","name":"a","uid":"1"},"startedAtMs":5}"#;
        let b = r#"{"pod":{"namespace":"default","name":"b","uid":"2"},"startedAtMs":6}"#;
        assert_eq!(stopped(&mut kept, &format!(r#"{{"timeMs":1,"events":[],"containers":[{b}]}}"#)), ["b"]);
        assert_eq!(stopped(&mut kept, r#"{"timeMs":2,"events":[],"containerChanges":{}}"#), ["b"]);
        let start_a = format!(r#"{{"timeMs":3,"events":[],"containerChanges":{{"started":[{a}]}}}}"#);
        assert_eq!(stopped(&mut kept, &start_a), ["a", "b"], "in order by pod");
        let stop_b =
            r#"{"timeMs":4,"events":[],"containerChanges":{"stopped":[{"namespace":"default","name":"b","uid":"2"}]}}"#;
        assert_eq!(stopped(&mut kept, stop_b), ["a"]);
        let misfit = std::panic::catch_unwind(move || stopped(&mut kept, stop_b));
        let why = misfit.unwrap_err();
        assert!(why.downcast_ref::<String>().unwrap().contains("which had no container"));
        // A component that did not ask.
        let unasked = std::panic::catch_unwind(|| {
            handle_json(
                &mut Echo,
                &mut self::kept(),
                br#"{"timeMs":0,"events":[],"containerChanges":{}}"#,
                &mut Vec::new(),
            )
        });
        assert!(unasked.unwrap_err().downcast_ref::<&str>().unwrap().contains("did not ask for"));
    }

    fn make() -> Box<dyn Controller> {
        Box::new(Echo)
    }

    /// Plays the host: alloc, write, call.
    fn send(guest: &mut Guest, bytes: &[u8]) -> usize {
        let address = guest.alloc(bytes.len()).expect("memory");
        guest.input_mut(address).expect("just allocated")[..bytes.len()].copy_from_slice(bytes);
        address
    }

    #[test]
    fn the_glue_round_trips_config_manifest_input_and_output_as_json() {
        let mut guest = Guest::new();
        let config = ComponentConfig { name: "echo".into(), ..ComponentConfig::default() };
        let bytes = serde_json::to_vec(&config).unwrap();
        let address = send(&mut guest, &bytes);
        let manifest: Manifest = serde_json::from_slice(guest.init(make, address, bytes.len())).unwrap();
        assert_eq!(manifest.name, "echo");
        assert_eq!(manifest.list_mode, ListMode::Quorum);

        let web0 = pod("default", "web-0", "uid-1", "5");
        let bytes = serde_json::to_vec(&input(7, vec![listed(0, "5", vec![web0.clone()])])).unwrap();
        let address = send(&mut guest, &bytes);
        let output: Output = serde_json::from_slice(guest.handle(address, bytes.len())).unwrap();
        assert_eq!(output.actions, vec![Action::Create { object: web0, dry_run: false }]);
        assert_eq!(guest.pending_inputs(), 0, "every input buffer is freed by the call it was passed to");
    }

    // The SDK asks the host to leave out what its watches already
    // delivered, and puts it back before the controller sees the event.
    #[test]
    fn a_part_the_host_left_out_is_put_back_before_the_controller_sees_it() {
        use crate::testing::ObjectExt;
        let mut guest = Guest::new();
        let bytes = serde_json::to_vec(&ComponentConfig { name: "echo".into(), ..ComponentConfig::default() }).unwrap();
        let address = send(&mut guest, &bytes);
        let manifest: Manifest = serde_json::from_slice(guest.init(make, address, bytes.len())).unwrap();
        assert!(manifest.omit_unchanged);

        let web0 = pod("default", "web-0", "uid-1", "5").with_spec(serde_json::json!({"nodeName": "node-1"}));
        let call = |guest: &mut Guest, text: String| -> Output {
            let address = send(guest, text.as_bytes());
            serde_json::from_slice(guest.handle(address, text.len())).unwrap()
        };
        call(&mut guest, serde_json::to_string(&input(7, vec![listed(0, "5", vec![web0.clone()])])).unwrap());
        // As the host writes it: the object without its spec, and which
        // part was left out.
        let modified = r#"{"timeMs":8,"events":[{"type":"watch","watch":0,"event":{"type":"MODIFIED",
            "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0","namespace":"default",
            "uid":"uid-1","resourceVersion":"6"}},"unchanged":["spec"]}}]}"#;
        let output = call(&mut guest, modified.to_owned());
        assert_eq!(output.actions, vec![Action::Create { object: web0.at_version("6"), dry_run: false }]);
    }

    /// A controller that keeps objects of its own types (recon-kube's)
    /// asks for whole objects: the manifest does not ask the host to leave
    /// anything out, and the glue keeps no table of what was delivered.
    #[test]
    fn a_controller_that_keeps_its_own_types_is_sent_whole_objects_and_keeps_no_table() {
        struct OwnTypes;
        impl Controller for OwnTypes {
            fn init(&mut self, config: &ComponentConfig) -> Manifest {
                Echo.init(config)
            }
            fn handle(&mut self, input: &Input) -> recon_abi::Output {
                Echo.handle(input)
            }
            fn omit_unchanged(&self) -> bool {
                false
            }
        }
        let (mut kept, mut manifest) = (Kept::default(), Vec::new());
        init_json(&mut OwnTypes, &mut kept, br#"{"name":"c"}"#, &mut manifest);
        let manifest: Manifest = serde_json::from_slice(&manifest).unwrap();
        assert!(!manifest.omit_unchanged);
        assert!(kept.delivered.is_none(), "no table is kept");
        // Echo's own manifest asks for it, as every SDK controller's does by default.
        init_json(&mut Echo, &mut kept, br#"{"name":"c"}"#, &mut Vec::new());
        assert!(kept.delivered.is_some());
    }

    #[test]
    #[should_panic(expected = "the watch never delivered that object")]
    fn a_part_left_out_of_an_object_never_delivered_panics() {
        let event = r#"{"timeMs":8,"events":[{"type":"watch","watch":0,"event":{"type":"MODIFIED",
            "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0"}},"unchanged":["status"]}}]}"#;
        handle_json(&mut Echo, &mut kept(), event.as_bytes(), &mut Vec::new());
    }

    #[test]
    fn the_wire_text_uses_the_documented_camel_case_tags() {
        let mut echo = Echo;
        let mut manifest = Vec::new();
        init_json(&mut echo, &mut kept(), br#"{"name":"c","node":"node-1"}"#, &mut manifest);
        let text = String::from_utf8(manifest).unwrap();
        assert!(text.contains(r#""abiVersion":1"#) && text.contains(r#""listMode":"quorum""#), "{text}");
        let mut output = b"what the last call left".to_vec();
        handle_json(&mut echo, &mut kept(), br#"{"timeMs":0,"events":[]}"#, &mut output);
        assert_eq!(output, br#"{"actions":[]}"#);
    }

    #[test]
    #[should_panic(expected = "the Input does not decode")]
    fn an_input_that_does_not_decode_panics_which_traps_the_instance() {
        handle_json(&mut Echo, &mut kept(), br#"{"timeMs":0,"events":[],"surprise":true}"#, &mut Vec::new());
    }

    #[test]
    #[should_panic(expected = "recon_handle: the Input is not UTF-8")]
    fn an_input_that_is_not_utf8_panics_before_it_is_parsed() {
        handle_json(&mut Echo, &mut kept(), b"{\"timeMs\":0,\"events\":[],\"x\":\"\xff\"}", &mut Vec::new());
    }

    #[test]
    #[should_panic(expected = "not a buffer from recon_alloc")]
    fn an_address_the_guest_did_not_allocate_panics_instead_of_reading_memory() {
        let mut guest = Guest::new();
        let address = guest.alloc(8).unwrap();
        guest.init(make, address + 1, 2);
    }

    #[test]
    #[should_panic(expected = "exceeds the 4 bytes")]
    fn a_length_beyond_the_buffer_panics_instead_of_reading_past_it() {
        let mut guest = Guest::new();
        let address = guest.alloc(4).unwrap();
        guest.init(make, address, 5);
    }

    #[test]
    #[should_panic(expected = "before recon_init")]
    fn handle_before_init_panics() {
        let mut guest = Guest::new();
        let address = send(&mut guest, b"{}");
        guest.handle(address, 2);
    }

    #[test]
    fn zero_length_buffers_have_distinct_addresses_and_an_empty_document_does_not_decode() {
        let mut guest = Guest::new();
        let (a, b) = (guest.alloc(0).unwrap(), guest.alloc(0).unwrap());
        assert_ne!(a, b);
        assert_eq!(guest.pending_inputs(), 2);
        let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            guest.init(make, a, 0);
        }));
        assert!(failed.is_err(), "an empty document is not a ComponentConfig");
    }

    // A call allocates no buffer for its input or output when the last
    // call's were big enough, and a large one is not held after its call.
    #[test]
    fn small_buffers_serve_the_next_call_and_large_ones_are_let_go() {
        let mut guest = Guest::new();
        let config =
            serde_json::to_vec(&ComponentConfig { name: "echo".into(), ..ComponentConfig::default() }).unwrap();
        let address = send(&mut guest, &config);
        guest.init(make, address, config.len());
        let small =
            serde_json::to_vec(&input(7, vec![listed(0, "5", vec![pod("default", "web-0", "u-1", "5")])])).unwrap();
        let call = |guest: &mut Guest, bytes: &[u8]| {
            let address = send(guest, bytes);
            let output = guest.handle(address, bytes.len());
            (address, output.as_ptr() as usize, serde_json::from_slice::<Output>(output).unwrap().actions.len())
        };
        let (first_in, first_out, created) = call(&mut guest, &small);
        assert_eq!(created, 1);
        let (second_in, second_out, created) = call(&mut guest, &small);
        assert_eq!((second_in, second_out, created), (first_in, first_out, 1), "the same buffers, the same answer");

        let pods = (0..1_000).map(|i| pod("default", &format!("web-{i}"), &format!("u-{i}"), "5")).collect();
        let large = serde_json::to_vec(&input(8, vec![listed(0, "5", pods)])).unwrap();
        assert!(large.len() > KEPT_BYTES);
        let (_, _, created) = call(&mut guest, &large);
        assert_eq!(created, 1_000);
        assert!(guest.spare.capacity() <= KEPT_BYTES, "the large input is not kept");
        call(&mut guest, &small);
        assert!(guest.output.capacity() <= KEPT_BYTES, "nor is the large output once the next call answered");
    }

    #[test]
    fn results_are_packed_as_address_high_and_length_low() {
        assert_eq!(pack(0x10, 0x20), 0x0000_0010_0000_0020);
        assert_eq!(pack(u32::MAX, 1) as u64 >> 32, u64::from(u32::MAX));
        assert_eq!(abi_version(), 1);
    }

    /// `compare_bytes` orders as `<[u8]>::cmp` does: every length across
    /// a word's edge, a difference at every place, bytes above 0x7f
    /// (compared unsigned), and the first difference winning over later
    /// ones.
    #[test]
    fn compare_bytes_orders_as_slices_do() {
        let sign = |x: i32| x.signum();
        let expected = |a: &[u8], b: &[u8]| a.cmp(b) as i32;
        for len in 0..=25 {
            let base: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
            assert_eq!(compare_bytes(&base, &base), 0, "equal, {len} bytes");
            for at in 0..len {
                for (x, y) in [(0x00, 0xff), (0x80, 0x7f), (b'a', b'b'), (0xfe, 0xff)] {
                    let (mut a, mut b) = (base.clone(), base.clone());
                    a[at] = x;
                    b[at] = y;
                    // A later difference the other way must not count.
                    if at + 1 < len {
                        a[len - 1] = 0xff;
                        b[len - 1] = 0x00;
                    }
                    assert_eq!(sign(compare_bytes(&a, &b)), sign(expected(&a, &b)), "{len} bytes, at {at}");
                    assert_eq!(sign(compare_bytes(&b, &a)), sign(expected(&b, &a)), "{len} bytes, at {at}");
                }
            }
        }
    }

    /// `memcmp` of nothing is 0 whatever the pointers.
    #[test]
    #[allow(unsafe_code, reason = "calling the C-contract function under test")]
    fn memcmp_of_nothing_reads_nothing() {
        // SAFETY: a length of 0 reads nothing.
        assert_eq!(unsafe { memcmp(std::ptr::null(), std::ptr::null(), 0) }, 0);
        let (a, b) = (b"recon-a", b"recon-b");
        // SAFETY: both point to 7 readable bytes.
        assert!(unsafe { memcmp(a.as_ptr(), b.as_ptr(), 7) } < 0);
    }
}
