//! The wording and bookkeeping of a plugin call that do not depend on the
//! engine: crash reasons, the result's decoding and the bounded log.
//!
//! Both engines use these, so that a crash reads the same natively and in
//! the browser, byte for byte.

use std::borrow::Cow;
use std::fmt::Display;

use recon_abi::Crash;
use recon_scenario::PluginSetting;
use serde::de::DeserializeOwned;

use crate::limits::raised_by;

/// How many `recon.log` lines an instance keeps until they are taken.
const MAX_LOG_LINES: usize = 1_000;

/// How much of one `recon.log` line is kept.
const MAX_LOG_LINE_BYTES: u64 = 4_096;

/// How a panic hook's log line begins (the Rust SDK's, and any other
/// language's that follows the ABI): `panicked at src/lib.rs:12:5: message`.
pub(crate) const PANIC_PREFIX: &str = "panicked at ";

/// The two calls that carry JSON.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Call {
    /// `recon_init`: a `ComponentConfig` in, a `Manifest` out.
    Init,
    /// `recon_handle`: an `Input` in, an `Output` out.
    Handle,
}

impl Call {
    /// The export it calls.
    pub(crate) fn export(self) -> &'static str {
        match self {
            Call::Init => "recon_init",
            Call::Handle => "recon_handle",
        }
    }

    /// What it returns, for crash reasons.
    fn what(self) -> &'static str {
        match self {
            Call::Init => "a manifest",
            Call::Handle => "an output",
        }
    }

    /// Decodes the result of this call, `(ptr << 32) | len` as the plugin
    /// returned it, if it is at most `max_bytes` long. `read(ptr, len)` gives
    /// those bytes of memory, or `None` if they are not all in its
    /// `memory_bytes`.
    pub(crate) fn decode<'m, T: DeserializeOwned>(
        self,
        name: &str,
        packed: i64,
        (memory_bytes, max_bytes): (u64, u64),
        read: impl FnOnce(u64, u64) -> Option<Cow<'m, [u8]>>,
    ) -> Result<T, Crash> {
        let export = self.export();
        let packed = packed as u64;
        let (ptr, len) = (packed >> 32, packed & 0xffff_ffff);
        // Before reading: an absurd length costs the host nothing.
        if len > max_bytes {
            let raise = raised_by(PluginSetting::MaxOutputBytes, max_bytes);
            let detail =
                format!("returned {} of {len} bytes, above the limit of {max_bytes} bytes; {raise}", self.what());
            return Err(crash(name, export, detail));
        }
        let Some(bytes) = read(ptr, len) else {
            let detail = format!(
                "returned an out-of-bounds result ({len} bytes at {ptr:#x}, in a memory of {memory_bytes} bytes)"
            );
            return Err(crash(name, export, detail));
        };
        let text = std::str::from_utf8(&bytes)
            .map_err(|e| crash(name, export, format!("returned {} that is not UTF-8 ({e})", self.what())))?;
        serde_json::from_str(text)
            .map_err(|e| crash(name, export, format!("returned {} that does not decode: {e}", self.what())))
    }
}

/// The bytes `start..start + len` lie in a memory of `memory_bytes`.
pub(crate) fn in_bounds(start: u64, len: u64, memory_bytes: u64) -> bool {
    start.checked_add(len).is_some_and(|end| end <= memory_bytes)
}

/// A crash of the plugin `name` in `export`: `"{name}: {export} {detail}"`.
pub(crate) fn crash(name: &str, export: &str, detail: impl Display) -> Crash {
    Crash::new(format!("{name}: {export} {detail}"))
}

/// Error messages may span lines; reasons may not.
pub(crate) fn one_line(error: &impl Display) -> String {
    error.to_string().split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The lines an instance logged through `recon.log`, bounded: at most 1,000
/// lines of at most 4 KiB are kept, then lines are only counted. It also
/// remembers whether the last line of the current call was a panic, which
/// words the crash if the call then traps.
#[derive(Debug, Default)]
pub(crate) struct Logs {
    lines: Vec<String>,
    dropped: usize,
    panic: Option<String>,
}

impl Logs {
    /// `recon.log(ptr, len)` on a memory of `memory_bytes`: keeps the line,
    /// bounded. `read(start, len)` gives those bytes of memory (they are
    /// always in bounds).
    /// Never fails, so a bad pointer cannot turn logging into a crash; it is
    /// logged instead.
    pub(crate) fn log<'m>(&mut self, ptr: i32, len: i32, memory_bytes: u64, read: impl Fn(u64, u64) -> Cow<'m, [u8]>) {
        let (start, len) = (u64::from(ptr as u32), u64::from(len as u32));
        let full = self.lines.len() >= MAX_LOG_LINES;
        // A line past the cap is only counted, unless it is a panic: its
        // words still make the crash reason (read once, at most 4 KiB).
        let prefix = PANIC_PREFIX.len() as u64;
        let is_panic = in_bounds(start, len, memory_bytes)
            && len >= prefix
            && read(start, prefix).as_ref() == PANIC_PREFIX.as_bytes();
        if full && !is_panic {
            self.dropped += 1;
            self.panic = None;
            return;
        }
        let line = if !in_bounds(start, len, memory_bytes) {
            format!("(recon.log was given {len} bytes at {start:#x}, outside memory)")
        } else if len > MAX_LOG_LINE_BYTES {
            let kept = read(start, MAX_LOG_LINE_BYTES);
            format!("{} [{} more bytes]", String::from_utf8_lossy(&kept), len - MAX_LOG_LINE_BYTES)
        } else {
            String::from_utf8_lossy(&read(start, len)).into_owned()
        };
        self.panic = is_panic.then(|| line.clone());
        if full {
            self.dropped += 1;
        } else {
            self.lines.push(line);
        }
    }

    /// A call begins: a panic logged by an earlier call no longer explains
    /// a trap.
    pub(crate) fn start_call(&mut self) {
        self.panic = None;
    }

    /// The current call's last line, if it is a panic (it begins with
    /// `panicked at `).
    pub(crate) fn panic(&self) -> Option<&str> {
        self.panic.as_deref()
    }

    /// The lines logged since the last call; a last line says how many more
    /// were dropped.
    pub(crate) fn take(&mut self) -> Vec<String> {
        let mut lines = std::mem::take(&mut self.lines);
        if self.dropped > 0 {
            lines.push(format!("({} more log lines dropped)", std::mem::take(&mut self.dropped)));
        }
        lines
    }
}
