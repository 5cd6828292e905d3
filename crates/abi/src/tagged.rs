//! Decoding the wire's internally tagged enums (`{"type":"watch", …}`)
//! without reading each value twice.
//!
//! serde's derived decoder for `#[serde(tag = "type")]` cannot know where
//! the tag is, so it first reads the whole map into a buffer of its own
//! (every string and map allocated once), finds the tag, then decodes the
//! variant from that buffer (allocated again). An input event carries
//! whole objects, so that doubled the cost of every plugin call: the JSON
//! of one kubelet input took 1.9 µs to decode natively against 0.9 µs for
//! the object alone.
//!
//! What the host writes, and what the SDK writes, puts the tag first. So
//! the decoders here read the first key: when it is `type`, they read the
//! variant's name and hand the rest of the same map straight to the
//! variant's fields (no buffer). When it is not (a hand-written message,
//! a format that sorts keys), they buffer the map as JSON values and
//! decode from that, as serde would have. Both give the same values and
//! refuse the same messages (unknown variant, unknown or duplicate field,
//! missing `type`).
//!
//! The variants' fields are decoded by an externally tagged twin of each
//! enum (`#[serde(remote = …)]` in `controller.rs`), which serde drives
//! through [`ByName`].

use std::fmt;
use std::marker::PhantomData;

use serde::Deserializer;
use serde::de::value::{MapAccessDeserializer, MapDeserializer};
use serde::de::{self, DeserializeSeed, EnumAccess, Error as _, IntoDeserializer, MapAccess, VariantAccess, Visitor};

/// An enum whose variants can be decoded once their name is known: the
/// externally tagged twin's decoder, which asks its deserializer for an
/// enum and is given the tag and the rest of the map.
pub(crate) trait ByName<'de>: Sized {
    /// Decodes the variant named by `deserializer`'s tag from its fields.
    fn deserialize_by_name<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error>;
}

/// Decodes an internally tagged `T` (tag key `type`) from a map.
pub(crate) fn deserialize<'de, D: Deserializer<'de>, T: ByName<'de>>(deserializer: D) -> Result<T, D::Error> {
    deserializer.deserialize_map(TaggedVisitor(PhantomData))
}

struct TaggedVisitor<T>(PhantomData<T>);

impl<'de, T: ByName<'de>> Visitor<'de> for TaggedVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map with a `type`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        match map.next_key_seed(FirstKeySeed)? {
            None => Err(A::Error::missing_field("type")),
            Some(FirstKey::Tag) => {
                let tag: String = map.next_value()?;
                T::deserialize_by_name(Tagged { tag, rest: map })
            }
            Some(FirstKey::Other(key)) => {
                // Not tag first: read every entry, then decode as above
                // from the buffer.
                let mut entries = serde_json::Map::new();
                entries.insert(key, map.next_value()?);
                while let Some(key) = map.next_key::<String>()? {
                    let value = map.next_value()?;
                    if entries.contains_key(&key) {
                        return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
                    }
                    entries.insert(key, value);
                }
                let tag = match entries.remove("type") {
                    Some(serde_json::Value::String(tag)) => tag,
                    Some(other) => return Err(A::Error::invalid_type(unexpected(&other), &"a variant name")),
                    None => return Err(A::Error::missing_field("type")),
                };
                let rest = MapDeserializer::new(entries.into_iter());
                T::deserialize_by_name(Tagged { tag, rest }).map_err(A::Error::custom)
            }
        }
    }
}

/// How a JSON value is named in an "invalid type" error.
fn unexpected(value: &serde_json::Value) -> de::Unexpected<'_> {
    match value {
        serde_json::Value::Null => de::Unexpected::Unit,
        serde_json::Value::Bool(b) => de::Unexpected::Bool(*b),
        serde_json::Value::Number(_) => de::Unexpected::Other("a number"),
        serde_json::Value::String(s) => de::Unexpected::Str(s),
        serde_json::Value::Array(_) => de::Unexpected::Seq,
        serde_json::Value::Object(_) => de::Unexpected::Map,
    }
}

/// The first key of a tagged map: the tag, or another key (kept for the
/// buffer).
enum FirstKey {
    Tag,
    Other(String),
}

/// Reads the first key as a [`FirstKey`].
struct FirstKeySeed;

impl<'de> DeserializeSeed<'de> for FirstKeySeed {
    type Value = FirstKey;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<FirstKey, D::Error> {
        deserializer.deserialize_str(FirstKeyVisitor)
    }
}

struct FirstKeyVisitor;

impl Visitor<'_> for FirstKeyVisitor {
    type Value = FirstKey;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<FirstKey, E> {
        Ok(if key == "type" { FirstKey::Tag } else { FirstKey::Other(key.to_owned()) })
    }
}

/// The tag and the rest of its map, served to the twin as an externally
/// tagged enum: the variant is the tag, its fields are the rest.
struct Tagged<A> {
    tag: String,
    rest: A,
}

impl<'de, A: MapAccess<'de>> Deserializer<'de> for Tagged<A> {
    type Error = A::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, A::Error> {
        visitor.visit_enum(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de, A: MapAccess<'de>> EnumAccess<'de> for Tagged<A> {
    type Error = A::Error;
    type Variant = Fields<A>;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Fields<A>), A::Error> {
        let variant = seed.deserialize(IntoDeserializer::<A::Error>::into_deserializer(self.tag))?;
        Ok((variant, Fields(self.rest)))
    }
}

/// The rest of the map, after the tag: the variant's fields.
struct Fields<A>(A);

impl<'de, A: MapAccess<'de>> VariantAccess<'de> for Fields<A> {
    type Error = A::Error;

    fn unit_variant(mut self) -> Result<(), A::Error> {
        match self.0.next_key::<String>()? {
            None => Ok(()),
            Some(key) => Err(A::Error::custom(format_args!("unknown field `{key}`: this variant has none"))),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        // As serde's internal tagging does: the newtype's own fields sit
        // beside the tag.
        seed.deserialize(MapAccessDeserializer::new(self.0))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, _visitor: V) -> Result<V::Value, A::Error> {
        Err(A::Error::custom("a tagged map cannot hold a tuple variant"))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        visitor.visit_map(self.0)
    }
}
