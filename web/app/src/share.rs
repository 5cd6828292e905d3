//! Share links: the whole run in the URL's fragment, so that opening the
//! link replays it exactly (same scenario, seed and plugins, so the same
//! trace hash), and nothing is sent to any server (browsers do not send
//! the fragment).
//!
//! The link is `#run=` followed by URL-safe base64 of a deflated payload:
//! the JSON of a [`Head`] (the scenario, the uploads by name and the size
//! and content key of each distinct plugin), a zero byte, then each
//! plugin's bytes as they are, in the head's order. Plugins travel as
//! bytes rather than as JSON numbers, and a plugin given to two components
//! travels once. Decoding checks every layer and says which one failed (a
//! plugin's bytes must match their key), so a truncated or hand-edited
//! link gets a clear message, never a wrong run.
//!
//! Links made before plugins travelled as bytes (format 1: the payload is
//! all JSON, each plugin an array of numbers) still open.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use recon_prepare::{PluginBytes, PluginKey};
use recon_trace::EntryId;
use serde::{Deserialize, Serialize};

use recon_web_protocol::Upload;

/// The fragment prefix of a share link.
pub const PREFIX: &str = "#run=";

/// The most a link may carry after compression: room for a typical Rust
/// plugin (a release build of the kubelet is ~440 KB, ~195 KB in a link).
/// Browsers accept URLs of a few megabytes, but links much longer than this
/// break in chat and mail; a run with larger plugins is shared as its
/// scenario, with a message.
pub const MAX_LINK_BYTES: usize = 512 * 1024;

/// The format this version writes; it reads this one and format 1, and
/// refuses links from a future version clearly.
const VERSION: u32 = 2;

/// The JSON that carried plugins as arrays of numbers.
const VERSION_WITH_INLINE_PLUGINS: u32 = 1;

/// What a link carries.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// The library scenario the run started from (for the menu).
    pub library: String,
    /// The scenario, with the user's edits and seed, as YAML.
    pub scenario: String,
    /// Uploaded plugins.
    pub uploads: Vec<Upload>,
    /// The entry to select on opening, if any.
    pub select: Option<EntryId>,
}

/// The JSON at the head of a link's payload; the plugins' bytes follow it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Head {
    /// Format version: [`VERSION`].
    v: u32,
    /// [`Link::library`].
    library: String,
    /// [`Link::scenario`].
    scenario: String,
    /// Uploaded plugins, each naming its bytes by index in `plugins`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    uploads: Vec<HeadUpload>,
    /// Each distinct plugin, in the order its bytes follow the head.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    plugins: Vec<HeadPlugin>,
    /// [`Link::select`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    select: Option<EntryId>,
}

/// An upload in a link's head.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct HeadUpload {
    component: String,
    file_name: String,
    /// Index in [`Head::plugins`].
    plugin: usize,
}

/// A plugin's bytes after a link's head: how many, and their key, which
/// they must match.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct HeadPlugin {
    size: usize,
    key: PluginKey,
}

/// A link of format 1, all JSON.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InlineLink {
    #[allow(dead_code, reason = "read to tell the format; checked before this is")]
    v: u32,
    library: String,
    scenario: String,
    #[serde(default)]
    uploads: Vec<InlineUpload>,
    #[serde(default)]
    select: Option<EntryId>,
}

/// An upload of format 1, its bytes inline.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InlineUpload {
    component: String,
    file_name: String,
    bytes: Vec<u8>,
}

/// Just the version, whatever else a head holds.
#[derive(Deserialize)]
struct Version {
    v: u32,
}

/// A link that was made, and what had to be left out.
#[derive(Clone, Debug, PartialEq)]
pub struct Made {
    /// The fragment, starting with [`PREFIX`].
    pub fragment: String,
    /// Set when the uploads did not fit and were left out: the message to show.
    pub left_out: Option<String>,
}

fn encode(library: &str, scenario: &str, uploads: &[Upload], select: Option<EntryId>) -> String {
    let mut plugins: Vec<&PluginBytes> = Vec::new();
    let mut head_uploads = Vec::with_capacity(uploads.len());
    for upload in uploads {
        let plugin = plugins.iter().position(|p| *p == &upload.plugin).unwrap_or_else(|| {
            plugins.push(&upload.plugin);
            plugins.len() - 1
        });
        head_uploads.push(HeadUpload {
            component: upload.component.clone(),
            file_name: upload.file_name.clone(),
            plugin,
        });
    }
    let head = Head {
        v: VERSION,
        library: library.into(),
        scenario: scenario.into(),
        uploads: head_uploads,
        plugins: plugins.iter().map(|p| HeadPlugin { size: p.bytes().len(), key: p.key().clone() }).collect(),
        select,
    };
    let mut payload = serde_json::to_vec(&head).expect("links are plain data");
    // JSON text never holds a zero byte (serde_json escapes control
    // characters), so the first one ends the head.
    payload.push(0);
    for plugin in plugins {
        payload.extend_from_slice(plugin.bytes());
    }
    let packed = miniz_oxide::deflate::compress_to_vec(&payload, 9);
    format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(packed))
}

/// Makes the link for a run; plugins too large for a link are left out,
/// with a message saying so.
pub fn make(library: &str, scenario: &str, uploads: &[Upload], select: Option<EntryId>) -> Made {
    let fragment = encode(library, scenario, uploads, select);
    if fragment.len() <= MAX_LINK_BYTES || uploads.is_empty() {
        return Made { fragment, left_out: None };
    }
    let files: Vec<&str> = uploads.iter().map(|u| u.file_name.as_str()).collect();
    let message = format!(
        "The link carries the scenario but not {}: plugins this large ({} KB in the link, the limit is {} KB) \
         must be shared as files.",
        files.join(", "),
        fragment.len() / 1024,
        MAX_LINK_BYTES / 1024
    );
    Made { fragment: encode(library, scenario, &[], select), left_out: Some(message) }
}

/// Reads a link's fragment (with or without the leading `#run=`).
pub fn read(fragment: &str) -> Result<Link, String> {
    let body = fragment.strip_prefix(PREFIX).or_else(|| fragment.strip_prefix("run=")).unwrap_or(fragment);
    let bad = |what: String| format!("This share link is damaged ({what}); showing the default scenario instead.");
    let packed = URL_SAFE_NO_PAD.decode(body.trim()).map_err(|e| bad(format!("not valid base64: {e}")))?;
    let payload = miniz_oxide::inflate::decompress_to_vec_with_limit(&packed, 64 << 20)
        .map_err(|e| bad(format!("it does not decompress, perhaps cut short: {e:?}")))?;
    let (head, bytes) = match payload.iter().position(|b| *b == 0) {
        Some(end) => (&payload[..end], &payload[end + 1..]),
        None => (&payload[..], &[][..]),
    };
    let undecodable = |e: serde_json::Error| bad(format!("its contents do not decode: {e}"));
    match serde_json::from_slice::<Version>(head).map_err(undecodable)?.v {
        VERSION => read_head(serde_json::from_slice(head).map_err(undecodable)?, bytes).map_err(bad),
        VERSION_WITH_INLINE_PLUGINS if bytes.is_empty() => {
            let link: InlineLink = serde_json::from_slice(head).map_err(undecodable)?;
            let uploads = link.uploads.into_iter().map(|u| Upload {
                component: u.component,
                file_name: u.file_name,
                plugin: PluginBytes::new(u.bytes),
            });
            Ok(Link { library: link.library, scenario: link.scenario, uploads: uploads.collect(), select: link.select })
        }
        VERSION_WITH_INLINE_PLUGINS => Err(bad("bytes after its contents".into())),
        v => Err(format!(
            "This share link was made by another version of Recon (format {v}, this one reads {VERSION}); \
             showing the default scenario instead."
        )),
    }
}

/// A link from its head and the bytes after it, or what is wrong with them.
fn read_head(head: Head, mut bytes: &[u8]) -> Result<Link, String> {
    let mut plugins = Vec::with_capacity(head.plugins.len());
    for (k, described) in head.plugins.iter().enumerate() {
        let file = head.uploads.iter().find(|u| u.plugin == k).map_or("a plugin", |u| u.file_name.as_str());
        if bytes.len() < described.size {
            return Err(format!("{file} is cut short"));
        }
        let (these, rest) = bytes.split_at(described.size);
        let plugin = PluginBytes::new(these.to_vec());
        if plugin.key() != &described.key {
            return Err(format!("{file} is not the file it was"));
        }
        plugins.push(plugin);
        bytes = rest;
    }
    if !bytes.is_empty() {
        return Err("bytes after its last plugin".into());
    }
    let uploads = head.uploads.into_iter().map(|u| {
        let plugin = plugins.get(u.plugin).cloned().ok_or_else(|| format!("{} has no bytes", u.file_name))?;
        Ok(Upload { component: u.component, file_name: u.file_name, plugin })
    });
    Ok(Link {
        library: head.library,
        scenario: head.scenario,
        uploads: uploads.collect::<Result<_, String>>()?,
        select: head.select,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_yaml() -> &'static str {
        recon_catalog::scenario(recon_catalog::DEFAULT_SCENARIO).unwrap().yaml
    }

    fn upload(component: &str, file_name: &str, bytes: &[u8]) -> Upload {
        Upload { component: component.into(), file_name: file_name.into(), plugin: PluginBytes::new(bytes.to_vec()) }
    }

    /// Incompressible bytes, as many as asked.
    fn noise(n: usize) -> Vec<u8> {
        let mut x = 0x2545f4914f6cdd1du64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// The payload inside a fragment, inflated.
    fn payload(fragment: &str) -> Vec<u8> {
        let packed = URL_SAFE_NO_PAD.decode(&fragment[PREFIX.len()..]).unwrap();
        miniz_oxide::inflate::decompress_to_vec(&packed).unwrap()
    }

    /// A fragment around a payload, as `encode` wraps one.
    fn fragment_of(payload: &[u8]) -> String {
        format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(miniz_oxide::deflate::compress_to_vec(payload, 9)))
    }

    #[test]
    fn a_link_round_trips_with_its_plugin_and_selection() {
        let upload = upload("kubelet-node-1", "k.wasm", &[0, 97, 115, 109, 1]);
        let made = make("pod-safety-59848", default_yaml(), std::slice::from_ref(&upload), Some(42));
        assert!(made.left_out.is_none());
        assert!(made.fragment.starts_with(PREFIX));
        assert!(made.fragment[PREFIX.len()..].bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        let link = read(&made.fragment).unwrap();
        assert_eq!(link.scenario, default_yaml());
        assert_eq!((link.uploads, link.select), (vec![upload], Some(42)));
    }

    #[test]
    fn a_fix_turned_on_travels_in_the_link_with_the_scenario() {
        let library = recon_catalog::scenario("replicaset-expectations-129795").expect("a museum entry");
        let mut scenario = recon_scenario::parse("museum.yaml", library.yaml).unwrap();
        scenario.set_fix("quorum-relist", true).unwrap();
        let made = make(library.name, &recon_scenario::to_yaml(&scenario), &[], None);
        let opened = recon_scenario::parse("opened.yaml", &read(&made.fragment).unwrap().scenario).unwrap();
        let on: Vec<&str> = opened.fixes.iter().filter(|f| f.enabled).map(|f| f.name.as_str()).collect();
        assert_eq!(on, ["quorum-relist"]);
    }

    #[test]
    fn plugins_travel_as_bytes_after_the_head_and_the_same_plugin_travels_once() {
        let bytes = noise(20_000);
        let uploads = [upload("kubelet-node-1", "k.wasm", &bytes), upload("kubelet-node-2", "k2.wasm", &bytes)];
        let made = make("pod-safety-59848", default_yaml(), &uploads, None);
        let payload = payload(&made.fragment);
        let end = payload.iter().position(|b| *b == 0).expect("a head, then the bytes");
        let head = std::str::from_utf8(&payload[..end]).unwrap();
        assert!(head.contains(r#""plugins":[{"size":20000,"key":"sha256-"#), "{head}");
        assert_eq!(&payload[end + 1..], &bytes[..], "the plugin's bytes once, as they are");
        // Incompressible bytes cost about 4/3 each in base64 (as JSON
        // numbers, they cost about twice that).
        let bare = make("pod-safety-59848", default_yaml(), &[], None).fragment.len();
        let cost = made.fragment.len() - bare;
        assert!(cost < 20_000 * 4 / 3 * 21 / 20, "{cost} characters for the plugin");
        assert_eq!(read(&made.fragment).unwrap().uploads, uploads);
    }

    #[test]
    fn a_link_made_before_plugins_travelled_as_bytes_still_opens() {
        // Format 1, as the previous version wrote it.
        let json = format!(
            r#"{{"v":1,"library":"pod-safety-59848","scenario":{},"uploads":[{{"component":"kubelet-node-1","fileName":"k.wasm","bytes":[0,97,115,109,1]}}],"select":7}}"#,
            serde_json::to_string(default_yaml()).unwrap()
        );
        let link = read(&fragment_of(json.as_bytes())).unwrap();
        assert_eq!(link.library, "pod-safety-59848");
        assert_eq!(link.scenario, default_yaml());
        assert_eq!(link.uploads, vec![upload("kubelet-node-1", "k.wasm", &[0, 97, 115, 109, 1])]);
        assert_eq!(link.select, Some(7));
        // And one without plugins.
        let json = format!(r#"{{"v":1,"library":"x","scenario":{}}}"#, serde_json::to_string("name: x").unwrap());
        assert_eq!(read(&fragment_of(json.as_bytes())).unwrap().uploads, vec![]);
    }

    #[test]
    fn plugins_too_large_for_a_link_are_left_out_with_a_message() {
        let upload = upload("kubelet-node-1", "big.wasm", &noise(600_000));
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
        let future = fragment_of(br#"{"v":9,"library":"","scenario":""}"#);
        assert!(read(&future).unwrap_err().contains("another version"));
    }

    #[test]
    fn a_plugin_cut_short_or_changed_in_a_link_is_refused_by_name() {
        let made = make("pod-safety-59848", "name: x", &[upload("kubelet-node-1", "k.wasm", &noise(1_000))], None);
        let mut payload = payload(&made.fragment);
        let whole = payload.clone();
        payload.truncate(payload.len() - 10);
        let error = read(&fragment_of(&payload)).unwrap_err();
        assert!(error.contains("damaged") && error.contains("k.wasm is cut short"), "{error}");
        let mut changed = whole.clone();
        *changed.last_mut().unwrap() ^= 1;
        let error = read(&fragment_of(&changed)).unwrap_err();
        assert!(error.contains("k.wasm is not the file it was"), "{error}");
        let mut longer = whole;
        longer.push(7);
        assert!(read(&fragment_of(&longer)).unwrap_err().contains("bytes after its last plugin"));
    }
}
