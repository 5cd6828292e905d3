//! The JSON Schema of the plugin ABI (feature `schema`), generated from the
//! types of this crate, so that a plugin in any language can check what it
//! sends and reads. `docs/plugin-abi.schema.json` is its output, checked
//! against it by `tests/schema.rs`.

use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use crate::{ActionResult, ComponentConfig, Manifest, Output, WireInput};

/// The messages, by the name of their definition: what crosses the
/// boundary in each direction.
pub const MESSAGES: [&str; 5] = ["ComponentConfig", "Manifest", "Input", "Output", "ActionResult"];

/// The JSON Schema (draft 2020-12) of every message of ABI version
/// [`crate::ABI_VERSION`]: each type under `$defs` by its Rust name, the
/// document itself any one of the [`MESSAGES`].
pub fn schema() -> Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let refs = [
        generator.subschema_for::<ComponentConfig>(),
        generator.subschema_for::<Manifest>(),
        generator.subschema_for::<WireInput>(),
        generator.subschema_for::<Output>(),
        generator.subschema_for::<ActionResult>(),
    ];
    let definitions = generator.take_definitions(true);
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": format!("Recon plugin ABI, version {}", crate::ABI_VERSION),
        "description": "Every message between the Recon host and a plugin, as UTF-8 JSON (docs/plugin-abi.md): \
                        recon_init reads a ComponentConfig and returns a Manifest; recon_handle reads an Input and \
                        returns an Output; each request's result comes back as an ActionResult inside a later \
                        Input. Generated from the Rust types in crates/abi.",
        "anyOf": refs.iter().map(|r| r.as_value()).collect::<Vec<_>>(),
        "$defs": definitions,
    })
}
