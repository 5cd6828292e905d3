//! Saving a file the page made (an exported trace) to the user's disk.

use wasm_bindgen::JsCast;
use web_sys::{Blob, BlobPropertyBag, HtmlAnchorElement, Url};

/// Offers `text` as a download named `file_name`; says why in one line if
/// the browser refuses.
pub fn save(file_name: &str, mime: &str, text: &str) -> Result<(), String> {
    let fail = |what: &str| format!("could not save {file_name}: {what}");
    let parts = js_sys::Array::of1(&text.into());
    let options = BlobPropertyBag::new();
    options.set_type(mime);
    let blob = Blob::new_with_str_sequence_and_options(&parts, &options).map_err(|_| fail("no Blob"))?;
    let url = Url::create_object_url_with_blob(&blob).map_err(|_| fail("no object URL"))?;
    let document = web_sys::window().and_then(|w| w.document()).ok_or_else(|| fail("no document"))?;
    let anchor: HtmlAnchorElement =
        document.create_element("a").map_err(|_| fail("no link"))?.dyn_into().map_err(|_| fail("no link"))?;
    anchor.set_href(&url);
    anchor.set_download(file_name);
    anchor.click();
    // The download has its own reference to the data by now.
    let _ = Url::revoke_object_url(&url);
    Ok(())
}
