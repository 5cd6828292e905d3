//! Deterministic hashes of JSON values, for template hashes such as
//! `controller-revision-hash`.
//!
//! The hash is taken over a canonical rendering (object keys sorted, no
//! whitespace) rather than over `serde_json`'s output, because the latter's
//! key order depends on a cargo feature (`preserve_order`) that any crate in
//! a build can switch on.

use std::fmt::Write;

use serde_json::Value;

/// 32-bit FNV-1a, the hash Kubernetes uses for pod template hashes.
pub fn fnv1a_32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, &b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

/// 64-bit FNV-1a.
pub fn fnv1a_64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The canonical JSON text of a value: object keys in byte order, no spaces.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                // A string renders the same whatever the features.
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => {
            let _ = write!(out, "{scalar}");
        }
    }
}

/// FNV-1a (32-bit) of the value's canonical JSON.
pub fn hash_json(value: &Value) -> u32 {
    fnv1a_32(canonical_json(value).as_bytes())
}

/// A label-safe hash of a pod template, e.g. `7c9b6d8f5`: the 32-bit hash
/// written in the alphabet Kubernetes uses for such hashes (no vowels, so no
/// accidental words; no 0, 1, 3 that look like letters).
pub fn template_hash(template: &Value) -> String {
    const SAFE: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    hash_json(template).to_string().bytes().map(|digit| SAFE[usize::from(digit) % SAFE.len()] as char).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        assert_eq!(fnv1a_32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a_32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a_64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn the_hash_ignores_key_order_but_not_values() {
        let a = json!({"spec": {"image": "web:1", "port": 80}, "labels": {"app": "web"}});
        let b = json!({"labels": {"app": "web"}, "spec": {"port": 80, "image": "web:1"}});
        let c = json!({"labels": {"app": "web"}, "spec": {"port": 80, "image": "web:2"}});
        assert_eq!(canonical_json(&b), r#"{"labels":{"app":"web"},"spec":{"image":"web:1","port":80}}"#);
        assert_eq!(template_hash(&a), template_hash(&b));
        assert_ne!(template_hash(&a), template_hash(&c));
        assert!(template_hash(&a).bytes().all(|c| c.is_ascii_alphanumeric()));
    }
}
