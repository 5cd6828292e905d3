//! [`Causes`]: the entries that led to one.

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::EntryId;

/// The entries that led to an entry, most direct first; read as a slice
/// (`causes.first()`, `causes[0]`, `causes.iter()`).
///
/// Almost every entry has exactly one cause. A `Vec` gave each its own
/// eight-byte allocation (nine million of them at Kubernetes' published
/// limits, and as many frees); one cause is kept inline, more (or none) in
/// a slice of their own, which for none allocates nothing. Two shapes, so
/// that the slice's pointer, never null, tells them apart: 16 bytes, where
/// a third shape for none would make it 24. Encoded as the list it reads
/// as.
#[derive(Clone, PartialEq, Eq)]
pub struct Causes(Repr);

#[derive(Clone, PartialEq, Eq)]
enum Repr {
    One(EntryId),
    /// None or several.
    Many(Box<[EntryId]>),
}

impl Default for Causes {
    fn default() -> Self {
        Causes(Repr::Many(Box::default()))
    }
}

impl Causes {
    /// Whether there are none (a root: a script step, a start, a fault).
    pub fn is_empty(&self) -> bool {
        matches!(&self.0, Repr::Many(ids) if ids.is_empty())
    }
}

impl Deref for Causes {
    type Target = [EntryId];

    fn deref(&self) -> &[EntryId] {
        match &self.0 {
            Repr::One(id) => std::slice::from_ref(id),
            Repr::Many(ids) => ids,
        }
    }
}

impl<'a> IntoIterator for &'a Causes {
    type Item = &'a EntryId;
    type IntoIter = std::slice::Iter<'a, EntryId>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl From<Vec<EntryId>> for Causes {
    fn from(ids: Vec<EntryId>) -> Self {
        Causes(match ids[..] {
            [id] => Repr::One(id),
            _ => Repr::Many(ids.into_boxed_slice()),
        })
    }
}

impl<const N: usize> From<[EntryId; N]> for Causes {
    fn from(ids: [EntryId; N]) -> Self {
        Causes::from(ids.to_vec())
    }
}

impl PartialEq<Vec<EntryId>> for Causes {
    fn eq(&self, other: &Vec<EntryId>) -> bool {
        **self == **other
    }
}

impl<const N: usize> PartialEq<[EntryId; N]> for Causes {
    fn eq(&self, other: &[EntryId; N]) -> bool {
        **self == other[..]
    }
}

impl fmt::Debug for Causes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl Serialize for Causes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Causes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::deserialize(deserializer).map(Causes::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// None, one and several causes read, compare and encode as the list.
    #[test]
    fn causes_read_as_their_list() {
        for ids in [vec![], vec![7], vec![7, 3, 9]] {
            let causes = Causes::from(ids.clone());
            assert_eq!(&*causes, &ids[..]);
            assert_eq!(causes, ids);
            assert_eq!(causes.is_empty(), ids.is_empty());
            assert_eq!(format!("{causes:?}"), format!("{ids:?}"));
            let json = serde_json::to_string(&causes).unwrap();
            assert_eq!(json, serde_json::to_string(&ids).unwrap());
            assert_eq!(serde_json::from_str::<Causes>(&json).unwrap(), causes);
        }
        assert_eq!(std::mem::size_of::<Causes>(), 16, "two words, where a Vec takes three");
    }
}
