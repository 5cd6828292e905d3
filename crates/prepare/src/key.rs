//! Plugins keyed by their content.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A plugin's content key: `sha256-` followed by the SHA-256 of its bytes
/// in lowercase hex. The same bytes have the same key on every platform,
/// in every version and whatever the file is called, and different bytes
/// never share one in practice, so a key can stand for the bytes: the
/// playground sends a plugin to its worker once and names it by key after.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PluginKey(String);

impl PluginKey {
    /// The key of these bytes.
    pub fn of(bytes: &[u8]) -> PluginKey {
        let digest = Sha256::digest(bytes);
        let mut text = String::with_capacity(7 + 2 * digest.len());
        text.push_str("sha256-");
        for byte in digest {
            text.push_str(&format!("{byte:02x}"));
        }
        PluginKey(text)
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PluginKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A plugin file's bytes, as given (nothing validated yet), with their
/// [`PluginKey`]. Clones share the bytes, so a setup that is copied around
/// (the playground keeps the last good one and the one being edited)
/// does not copy the plugin; two are equal when their keys are.
#[derive(Clone)]
pub struct PluginBytes {
    key: PluginKey,
    bytes: Arc<[u8]>,
}

impl PluginBytes {
    /// Takes the bytes and computes their key.
    pub fn new(bytes: impl Into<Arc<[u8]>>) -> PluginBytes {
        let bytes = bytes.into();
        PluginBytes { key: PluginKey::of(&bytes), bytes }
    }

    /// The content key.
    pub fn key(&self) -> &PluginKey {
        &self.key
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl PartialEq for PluginBytes {
    fn eq(&self, other: &PluginBytes) -> bool {
        self.key == other.key
    }
}

impl Eq for PluginBytes {}

// Half a megabyte of numbers helps nobody reading a debug print.
impl fmt::Debug for PluginBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PluginBytes({}, {} bytes)", self.key, self.bytes.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_the_sha256_of_the_bytes_and_never_changes() {
        // The FIPS 180-2 test vector: a key written into a link or sent to a
        // worker today must name the same bytes tomorrow.
        assert_eq!(
            PluginKey::of(b"abc").as_str(),
            "sha256-ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(PluginKey::of(b"abc"), PluginBytes::new(b"abc".to_vec()).key().clone());
        assert_ne!(PluginKey::of(b"abc"), PluginKey::of(b"abd"));
    }

    #[test]
    fn plugin_bytes_compare_by_content_and_print_without_their_bytes() {
        let a = PluginBytes::new(vec![0, 97, 115, 109]);
        let b = PluginBytes::new(vec![0, 97, 115, 109]);
        assert_eq!(a, b);
        assert_ne!(a, PluginBytes::new(vec![0, 97, 115, 110]));
        assert_eq!(format!("{a:?}"), format!("PluginBytes({}, 4 bytes)", a.key()));
    }
}
