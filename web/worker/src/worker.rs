//! The Web Worker's side: receive plugins' bytes as binary messages,
//! [`ToWorker`] requests as JSON strings ([`recon_web_protocol`]) and an
//! audit request as an array of its JSON and its `File`s; run the requests
//! with a [`Runner`] (audit logs with [`crate::audit`]), post
//! [`FromWorker`] answers back.
//!
//! A request runs to completion before the next is read; the page stops a
//! run by terminating the worker and starting a fresh one.

use std::cell::RefCell;
use std::rc::Rc;

use std::io::Read;

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::Closure;
use web_sys::{DedicatedWorkerGlobalScope, FileReaderSync, MessageEvent};

use crate::audit::AuditLog;
use crate::runner::{Progress, Runner};
use recon_web_protocol::{FromWorker, ToWorker};

/// Posts answers to the page and reads the worker's clock.
struct Port {
    scope: DedicatedWorkerGlobalScope,
}

impl Progress for Port {
    fn now_ms(&mut self) -> f64 {
        self.scope.performance().map_or(0.0, |p| p.now())
    }

    fn memory_bytes(&mut self) -> Option<u64> {
        Some(crate::memory::live_bytes())
    }

    fn report(&mut self, message: FromWorker) {
        // JSON as bytes in an ArrayBuffer handed over, not as a string: a
        // big run's trace is hundreds of megabytes, and V8 refuses a string
        // past 512 MiB. A trace's entries go ahead in messages of their
        // own, and each message is encoded in pieces (`crate::answer`),
        // each copied over and freed in turn.
        use crate::answer::{ENTRIES_BYTES, MAX_ANSWER_BYTES, PIECE_BYTES};
        crate::answer::encode_all(message, MAX_ANSWER_BYTES, PIECE_BYTES, ENTRIES_BYTES, |encoded| {
            let array = js_sys::Uint8Array::new_with_length(encoded.len as u32);
            let mut at = 0u32;
            for piece in encoded.pieces {
                let end = at + piece.len() as u32;
                array.subarray(at, end).copy_from(&piece);
                at = end;
            }
            let buffer = array.buffer();
            // Posting fails only if the page is gone; nobody is left to tell.
            let _ = self.scope.post_message_with_transfer(&buffer, &js_sys::Array::of1(&buffer));
        });
    }
}

/// Starts serving requests; called once when the worker's module loads.
pub fn start() {
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let mut port = Port { scope: scope.clone() };
    let runner = match Runner::new() {
        Ok(runner) => Rc::new(RefCell::new(runner)),
        Err(error) => {
            port.report(FromWorker::Failed { id: 0, component: None, error });
            return;
        }
    };
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        let mut port = Port { scope: js_sys::global().unchecked_into() };
        let data = event.data();
        // A plugin's bytes: kept for the requests that name them; no answer.
        if data.is_instance_of::<js_sys::ArrayBuffer>() || data.is_instance_of::<js_sys::Uint8Array>() {
            runner.borrow_mut().receive_plugin(js_sys::Uint8Array::new(&data).to_vec());
            return;
        }
        // An audit request: its JSON, then its files.
        let (text, files) = match data.dyn_ref::<js_sys::Array>() {
            Some(parts) => (parts.get(0).as_string().unwrap_or_default(), parts.slice(1, parts.length())),
            None => (data.as_string().unwrap_or_default(), js_sys::Array::new()),
        };
        match serde_json::from_str::<ToWorker>(&text) {
            Ok(ToWorker::Audit { id, files: names }) => {
                let answer = match audit_logs(&names, &files) {
                    Ok(logs) => crate::audit::audit(id, logs, &mut port),
                    Err(error) => FromWorker::Failed { id, component: None, error },
                };
                port.report(answer);
            }
            Ok(request) => runner.borrow_mut().handle(request, &mut port),
            Err(e) => port.report(FromWorker::Failed { id: 0, component: None, error: format!("bad request: {e}") }),
        }
    });
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    // The handler lives as long as the worker.
    on_message.forget();
    port.report(FromWorker::Ready);
}

/// The files of an audit request, each read where it is (the visitor's
/// disk), a slice at a time, under the name the request gives it.
fn audit_logs(names: &[String], files: &js_sys::Array) -> Result<Vec<AuditLog>, String> {
    if names.len() != files.length() as usize {
        return Err(format!(
            "the audit request names {} file(s) but {} came with it (a page bug): open them again",
            names.len(),
            files.length()
        ));
    }
    let reader = FileReaderSync::new().map_err(|e| format!("this browser cannot read files in a worker: {e:?}"))?;
    names
        .iter()
        .zip(files.iter())
        .map(|(name, file)| {
            let file: web_sys::File = file.dyn_into().map_err(|_| format!("{name}: not a file (a page bug)"))?;
            let size = file.size();
            let input = FileInput { reader: reader.clone(), file, offset: 0.0, size };
            Ok(AuditLog { name: name.clone(), size: size as u64, input: Box::new(input) })
        })
        .collect()
}

/// A file read through `FileReaderSync`, one slice per read.
struct FileInput {
    reader: FileReaderSync,
    file: web_sys::File,
    offset: f64,
    size: f64,
}

impl Read for FileInput {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.offset >= self.size || buf.is_empty() {
            return Ok(0);
        }
        let end = (self.offset + buf.len() as f64).min(self.size);
        let slice = self.file.slice_with_f64_and_f64(self.offset, end).map_err(js_error)?;
        let buffer = self.reader.read_as_array_buffer(&slice).map_err(js_error)?;
        let bytes = js_sys::Uint8Array::new(&buffer);
        let n = (bytes.length() as usize).min(buf.len());
        bytes.subarray(0, n as u32).copy_to(&mut buf[..n]);
        self.offset += n as f64;
        Ok(n)
    }
}

/// A JavaScript exception (the file changed or vanished) as a read error.
fn js_error(e: wasm_bindgen::JsValue) -> std::io::Error {
    std::io::Error::other(format!("{e:?}"))
}
