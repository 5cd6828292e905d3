//! What happens if the playground's own code ever panics: never a frozen
//! page.
//!
//! A panic in WebAssembly aborts the module, so after one the Yew app can
//! no longer answer anything. The page's hook therefore draws, with plain
//! DOM calls that need no Rust state, a message over the page that says
//! what broke and offers a reload; the URL carries the scenario the visitor
//! was working on (the app keeps it there as it changes), so the reload
//! keeps their work. (The worker's hook is `recon_worker::crash`.)

#[cfg(target_arch = "wasm32")]
use recon_web_protocol::describe_panic as describe;

/// Installs the page's hook: log the panic and cover the page with a
/// message and a Reload button. Through Yew, which otherwise installs its
/// own hook (a console message only) when the app starts.
#[cfg(target_arch = "wasm32")]
pub fn install_page_hook() {
    yew::set_custom_panic_hook(Box::new(|info| {
        let text = describe(info);
        web_sys::console::error_1(&format!("Recon playground: {text}").into());
        let _ = show_overlay(&text);
    }));
}

/// The message over the page, built without the (now unusable) app.
#[cfg(target_arch = "wasm32")]
fn show_overlay(text: &str) -> Option<()> {
    use wasm_bindgen::JsCast;
    use wasm_bindgen::prelude::Closure;
    let document = web_sys::window()?.document()?;
    if document.get_element_by_id("page-crashed").is_some() {
        return Some(()); // a second panic while the first is shown
    }
    let overlay = document.create_element("div").ok()?;
    overlay.set_id("page-crashed");
    overlay.set_attribute("role", "alertdialog").ok()?;
    overlay.set_attribute("aria-labelledby", "page-crashed-title").ok()?;
    overlay.set_attribute("class", "page-crashed").ok()?;
    let card = document.create_element("div").ok()?;
    let title = document.create_element("h2").ok()?;
    title.set_id("page-crashed-title");
    title.set_text_content(Some("The playground stopped working"));
    let explain = document.create_element("p").ok()?;
    explain.set_text_content(Some(
        "Something in the page failed, so it can no longer answer. Reloading starts it again with the \
         scenario you were working on (it is kept in the address).",
    ));
    let detail = document.create_element("pre").ok()?;
    detail.set_text_content(Some(text));
    let button = document.create_element("button").ok()?;
    button.set_id("page-crashed-reload");
    button.set_attribute("type", "button").ok()?;
    button.set_text_content(Some("Reload"));
    let reload = Closure::<dyn FnMut()>::new(|| {
        if let Some(window) = web_sys::window() {
            let _ = window.location().reload();
        }
    });
    button.add_event_listener_with_callback("click", reload.as_ref().unchecked_ref()).ok()?;
    // The page lives until the reload: so does the handler.
    reload.forget();
    for child in [&title, &explain, &detail, &button] {
        card.append_child(child).ok()?;
    }
    overlay.append_child(&card).ok()?;
    document.body()?.append_child(&overlay).ok()?;
    if let Some(button) = button.dyn_ref::<web_sys::HtmlElement>() {
        let _ = button.focus();
    }
    Some(())
}
