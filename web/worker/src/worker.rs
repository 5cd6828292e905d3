//! The Web Worker's side: receive plugins' bytes as binary messages and
//! [`ToWorker`] requests as JSON strings ([`recon_web_protocol`]), run the
//! requests with a [`Runner`], post [`FromWorker`] answers back.
//!
//! A request runs to completion before the next is read; the page stops a
//! run by terminating the worker and starting a fresh one.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::Closure;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

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

    fn report(&mut self, message: FromWorker) {
        let text = serde_json::to_string(&message).expect("messages are plain data");
        // Posting fails only if the page is gone; nobody is left to tell.
        let _ = self.scope.post_message(&text.into());
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
        let text = data.as_string().unwrap_or_default();
        match serde_json::from_str::<ToWorker>(&text) {
            Ok(request) => runner.borrow_mut().handle(request, &mut port),
            Err(e) => port.report(FromWorker::Failed { id: 0, component: None, error: format!("bad request: {e}") }),
        }
    });
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    // The handler lives as long as the worker.
    on_message.forget();
    port.report(FromWorker::Ready);
}
