//! Saving a file the page made (an exported trace) to the user's disk.

use wasm_bindgen::JsCast;
use web_sys::{Blob, BlobPropertyBag, HtmlAnchorElement, Url};

use super::pieces::Pieces;

/// How many bytes go to the browser at a time.
const PIECE_BYTES: usize = 4 << 20;

/// Offers what `write` writes as a download named `file_name` (`write`
/// says whether it wrote the whole file); says why in one line if the
/// browser refuses. The bytes go to the browser a piece at a time as they
/// are written, so no string or buffer of the whole file is made: a
/// 1,000-node run's trace is 590 MB of JSON, longer than any string a
/// browser makes, and a buffer of it would stay in the page's memory,
/// which never shrinks.
pub fn save(file_name: &str, mime: &str, write: impl FnOnce(&mut Pieces<'_>) -> bool) -> Result<(), String> {
    let fail = |what: &str| format!("could not save {file_name}: {what}");
    let parts = js_sys::Array::new();
    let mut hand_over = |piece: &[u8]| {
        parts.push(&js_sys::Uint8Array::from(piece));
    };
    let mut pieces = Pieces::new(PIECE_BYTES, &mut hand_over);
    // Writing to the pieces cannot fail, nor encoding a trace.
    if !write(&mut pieces) {
        return Err(fail("the file could not be encoded"));
    }
    pieces.finish();
    let options = BlobPropertyBag::new();
    options.set_type(mime);
    let blob = Blob::new_with_u8_array_sequence_and_options(&parts, &options).map_err(|_| fail("no Blob"))?;
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
