//! Share links: the whole run in the URL's fragment, so that opening the
//! link replays it exactly (same scenario, seed and plugins, so the same
//! trace hash), and nothing is sent to any server (browsers do not send
//! the fragment).
//!
//! The link is `#run=` followed by URL-safe base64 of the deflated JSON of
//! a [`Link`]. Decoding checks every layer and says which one failed, so a
//! truncated or hand-edited link gets a clear message, never a wrong run.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use recon_trace::EntryId;
use serde::{Deserialize, Serialize};

use crate::protocol::Upload;

/// The fragment prefix of a share link.
pub const PREFIX: &str = "#run=";

/// The most a link may carry after compression: room for a typical Rust
/// plugin (a release build of a built-in is ~450 KB, ~240 KB in a link).
/// Browsers accept URLs of a few megabytes, but links much longer than this
/// break in chat and mail; a run with larger plugins is shared as its
/// scenario, with a message.
pub const MAX_LINK_BYTES: usize = 512 * 1024;

/// The format version; links from a future version are refused clearly.
const VERSION: u32 = 1;

/// What a link carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Link {
    /// Format version.
    pub v: u32,
    /// The library scenario the run started from (for the menu).
    pub library: String,
    /// The scenario, with the user's edits and seed, as YAML.
    pub scenario: String,
    /// Uploaded plugins, inline.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uploads: Vec<Upload>,
    /// The entry to select on opening, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select: Option<EntryId>,
}

/// A link that was made, and what had to be left out.
#[derive(Clone, Debug, PartialEq)]
pub struct Made {
    /// The fragment, starting with [`PREFIX`].
    pub fragment: String,
    /// Set when the uploads did not fit and were left out: the message to show.
    pub left_out: Option<String>,
}

fn encode(link: &Link) -> String {
    let json = serde_json::to_vec(link).expect("links are plain data");
    let packed = miniz_oxide::deflate::compress_to_vec(&json, 9);
    format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(packed))
}

/// Makes the link for a run; plugins too large for a link are left out,
/// with a message saying so.
pub fn make(library: &str, scenario: &str, uploads: &[Upload], select: Option<EntryId>) -> Made {
    let mut link =
        Link { v: VERSION, library: library.into(), scenario: scenario.into(), uploads: uploads.to_vec(), select };
    let fragment = encode(&link);
    if fragment.len() <= MAX_LINK_BYTES || uploads.is_empty() {
        return Made { fragment, left_out: None };
    }
    let files: Vec<&str> = uploads.iter().map(|u| u.file_name.as_str()).collect();
    link.uploads.clear();
    let message = format!(
        "The link carries the scenario but not {}: plugins this large ({} KB in the link, the limit is {} KB) \
         must be shared as files.",
        files.join(", "),
        fragment.len() / 1024,
        MAX_LINK_BYTES / 1024
    );
    Made { fragment: encode(&link), left_out: Some(message) }
}

/// Reads a link's fragment (with or without the leading `#run=`).
pub fn read(fragment: &str) -> Result<Link, String> {
    let body = fragment.strip_prefix(PREFIX).or_else(|| fragment.strip_prefix("run=")).unwrap_or(fragment);
    let bad = |what: String| format!("This share link is damaged ({what}); showing the default scenario instead.");
    let packed = URL_SAFE_NO_PAD.decode(body.trim()).map_err(|e| bad(format!("not valid base64: {e}")))?;
    let json = miniz_oxide::inflate::decompress_to_vec_with_limit(&packed, 64 << 20)
        .map_err(|e| bad(format!("it does not decompress, perhaps cut short: {e:?}")))?;
    let link: Link = serde_json::from_slice(&json).map_err(|e| bad(format!("its contents do not decode: {e}")))?;
    if link.v != VERSION {
        return Err(format!(
            "This share link was made by another version of Recon (format {}, this one reads {VERSION}); \
             showing the default scenario instead.",
            link.v
        ));
    }
    Ok(link)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_yaml() -> &'static str {
        recon_catalog::scenario(recon_catalog::DEFAULT_SCENARIO).unwrap().yaml
    }

    #[test]
    fn a_link_round_trips_with_its_plugin_and_selection() {
        let upload =
            Upload { component: "kubelet-node-1".into(), file_name: "k.wasm".into(), bytes: vec![0, 97, 115, 109, 1] };
        let made = make("pod-safety-59848", default_yaml(), std::slice::from_ref(&upload), Some(42));
        assert!(made.left_out.is_none());
        assert!(made.fragment.starts_with(PREFIX));
        assert!(made.fragment[PREFIX.len()..].bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        let link = read(&made.fragment).unwrap();
        assert_eq!(link.scenario, default_yaml());
        assert_eq!((link.uploads, link.select), (vec![upload], Some(42)));
    }

    #[test]
    fn plugins_too_large_for_a_link_are_left_out_with_a_message() {
        // Incompressible bytes, well past the limit.
        let mut x = 0x2545f4914f6cdd1du64;
        let bytes: Vec<u8> = (0..600_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let upload = Upload { component: "kubelet-node-1".into(), file_name: "big.wasm".into(), bytes };
        let made = make("pod-safety-59848", default_yaml(), &[upload], None);
        let message = made.left_out.expect("a message");
        assert!(message.contains("big.wasm"), "{message}");
        assert!(made.fragment.len() <= MAX_LINK_BYTES);
        assert!(read(&made.fragment).unwrap().uploads.is_empty());
    }

    #[test]
    fn damaged_links_say_what_is_wrong() {
        let made = make("pod-safety-59848", default_yaml(), &[], None);
        let truncated = &made.fragment[..made.fragment.len() / 2];
        assert!(read(truncated).unwrap_err().contains("damaged"));
        assert!(read("#run=not base64 at all!").unwrap_err().contains("base64"));
        let edited = made.fragment.replacen('A', "B", 3);
        if edited != made.fragment {
            assert!(read(&edited).is_err());
        }
        let future =
            encode(&Link { v: 9, library: String::new(), scenario: String::new(), uploads: vec![], select: None });
        assert!(read(&future).unwrap_err().contains("another version"));
    }
}
