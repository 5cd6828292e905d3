//! Load-time checks: is this a plugin the sandbox can run?
//!
//! wasmparser's validator does the WebAssembly part with a fixed feature set;
//! the checks around it look at each section first, so that the common
//! mistakes (a WASI build, a shared memory, a missing export) get a message
//! that says what to do rather than a validator error.

use wasmparser::{
    BinaryReaderError, ConstExpr, DataKind, ElementItems, ElementKind, Encoding, ExternalKind, FuncType,
    MemorySectionReader, Operator, Parser, Payload, TypeRef, ValType, ValidPayload, Validator, WasmFeatures,
    types::{CoreTypeId, Types},
};

use crate::instrument::TABLE_ELEMENTS;
use crate::limits::{PAGE_BYTES, raised_by};
use crate::{DEPTH_EXPORT, FUEL_EXPORT, Limits, PluginError, STACK_EXPORT};
use recon_scenario::PluginSetting;

/// What plugins may use: WebAssembly 2.0, which is what rustc emits for
/// `wasm32-unknown-unknown` by default (mutable globals, sign extension,
/// non-trapping float-to-int, multi-value, bulk memory, reference types) plus
/// SIMD, all deterministic once NaNs are canonicalised. Not GC types
/// (`externref`): nothing can hand a plugin one, and wasmtime is built
/// without a collector. Everything else (threads, relaxed SIMD, tail calls,
/// memory64, multi-memory, exceptions, GC, components) is refused.
pub(crate) const FEATURES: WasmFeatures = WasmFeatures::WASM2.difference(WasmFeatures::GC_TYPES);

/// The function exports of ABI version 1, with their types.
const FUNCTIONS: [(&str, &[ValType], &[ValType], &str); 4] = [
    ("recon_abi_version", &[], &[ValType::I32], "a function () -> i32"),
    ("recon_alloc", &[ValType::I32], &[ValType::I32], "a function (i32) -> i32"),
    ("recon_init", &[ValType::I32, ValType::I32], &[ValType::I64], "a function (i32, i32) -> i64"),
    ("recon_handle", &[ValType::I32, ValType::I32], &[ValType::I64], "a function (i32, i32) -> i64"),
];

/// What validation learns about a function's operand stack, which the
/// instrumentation charges as part of its frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct OperandStack {
    /// The most values it holds at once.
    pub(crate) max_values: u32,
    /// Whether it ever holds a `v128`, which takes two slots.
    pub(crate) vectors: bool,
}

/// Checks everything the sandbox requires of `bytes`; see [`PluginError`]
/// for the cases. Returns the operand stack of each defined function, in
/// order.
pub(crate) fn validate(name: &str, bytes: &[u8], limits: &Limits) -> Result<Vec<OperandStack>, PluginError> {
    let name_ = || name.to_owned();
    if !bytes.starts_with(b"\0asm") {
        let found = match bytes.len() {
            0 => "it is empty".to_owned(),
            n => format!("it starts with \"{}\"", bytes[..n.min(8)].escape_ascii()),
        };
        return Err(PluginError::NotWasm { name: name_(), found });
    }
    let too_large = |problem: String| PluginError::TooLarge { name: name_(), problem };
    if bytes.len() as u64 > limits.max_module_bytes {
        let limit = limits.max_module_bytes;
        let raise = raised_by(PluginSetting::MaxModuleBytes, limit);
        return Err(too_large(format!(
            "is {} bytes, above the limit of {limit} bytes for a plugin; {raise}",
            bytes.len()
        )));
    }
    let segment = |problem: String| Err(PluginError::Segment { name: name_(), problem });
    let refuse = |err: BinaryReaderError| refused(name, err);
    let mut validator = Validator::new_with_features(FEATURES);
    let mut log_type = None;
    let mut exports = Vec::new();
    // Initial sizes, for the segments: memory in bytes, tables in elements.
    let mut memory_bytes = 0;
    let mut tables = Vec::new();
    let mut operand_stacks = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(refuse)?;
        match &payload {
            Payload::Version { encoding: Encoding::Component, .. } => {
                return Err(PluginError::Component { name: name_() });
            }
            Payload::ImportSection(reader) => {
                for import in reader.clone().into_imports() {
                    let import = import.map_err(refuse)?;
                    match (import.module, import.name, import.ty) {
                        ("recon", "log", TypeRef::Func(ty)) => log_type = Some(ty),
                        (module, field, _) => {
                            // Escaped: the names are the module's bytes, and a
                            // refusal is one line whatever they hold.
                            let import = format!("{}.{}", module.escape_debug(), field.escape_debug());
                            let instead = import_instead(module);
                            return Err(PluginError::Import { name: name_(), import, instead });
                        }
                    }
                }
            }
            Payload::MemorySection(reader) => memory_bytes = check_memory(name, reader.clone(), limits)?,
            Payload::FunctionSection(reader) if reader.count() > limits.max_functions => {
                let limit = limits.max_functions;
                let raise = raised_by(PluginSetting::MaxFunctions, u64::from(limit));
                return Err(too_large(format!(
                    "defines {} functions, above the limit of {limit}; {raise}",
                    reader.count()
                )));
            }
            Payload::TableSection(reader) => {
                for table in reader.clone() {
                    let initial = table.map_err(refuse)?.ty.initial;
                    if initial > TABLE_ELEMENTS {
                        return segment(format!(
                            "declares a table of {initial} elements, above the cap of {TABLE_ELEMENTS}"
                        ));
                    }
                    tables.push(initial);
                }
            }
            // Segments that do not fit would fail instantiation, in words
            // that differ between engines: refuse them here, in one.
            Payload::DataSection(reader) => {
                for data in reader.clone() {
                    let data = data.map_err(refuse)?;
                    let DataKind::Active { offset_expr, .. } = data.kind else { continue };
                    let Some(at) = constant(&offset_expr) else { continue };
                    let len = data.data.len() as u64;
                    if at + len > memory_bytes {
                        return segment(format!(
                            "has a data segment of {len} bytes at {at:#x}, past the end of its initial memory \
                             ({memory_bytes} bytes)"
                        ));
                    }
                }
            }
            Payload::ElementSection(reader) => {
                for element in reader.clone() {
                    let element = element.map_err(refuse)?;
                    let ElementKind::Active { table_index, offset_expr } = element.kind else { continue };
                    let Some(at) = constant(&offset_expr) else { continue };
                    let len = u64::from(match &element.items {
                        ElementItems::Functions(items) => items.count(),
                        ElementItems::Expressions(_, items) => items.count(),
                    });
                    let size = tables.get(table_index.unwrap_or(0) as usize).copied().unwrap_or(0);
                    if at + len > size {
                        return segment(format!(
                            "has an element segment of {len} elements at {at}, past the end of its table \
                             ({size} elements)"
                        ));
                    }
                }
            }
            Payload::StartSection { .. } => return Err(PluginError::StartFunction { name: name_() }),
            Payload::ExportSection(reader) => {
                for export in reader.clone() {
                    let export = export.map_err(refuse)?;
                    if [FUEL_EXPORT, DEPTH_EXPORT, STACK_EXPORT].contains(&export.name) {
                        return Err(PluginError::ReservedExport { name: name_(), export: export.name.to_owned() });
                    }
                    exports.push((export.name.to_owned(), export.kind, export.index));
                }
            }
            _ => {}
        }
        match validator.payload(&payload).map_err(refuse)? {
            ValidPayload::Func(func, body) => {
                let depth = nesting_depth(&body).map_err(refuse)?;
                if depth > MAX_NESTING_DEPTH {
                    return Err(too_large(format!(
                        "has a function (index {}) nested {depth} blocks deep, above the limit of {MAX_NESTING_DEPTH}",
                        func.index
                    )));
                }
                let mut func = func.into_validator(Default::default());
                operand_stacks.push(validate_body(&mut func, &body).map_err(refuse)?);
            }
            ValidPayload::End(types) => check_abi(name, &types, log_type, &exports)?,
            ValidPayload::Ok | ValidPayload::Parser(_) => {}
        }
    }
    Ok(operand_stacks)
}

/// Validates one function body, as `FuncValidator::validate` does, watching
/// its operand stack as it goes.
fn validate_body(
    func: &mut wasmparser::FuncValidator<wasmparser::ValidatorResources>,
    body: &wasmparser::FunctionBody<'_>,
) -> Result<OperandStack, BinaryReaderError> {
    let mut reader = body.get_binary_reader();
    func.read_locals(&mut reader)?;
    reader.set_features(FEATURES);
    let mut stack = OperandStack::default();
    while !reader.eof() {
        reader.visit_operator(&mut func.visitor(reader.original_position()))??;
        stack.max_values = stack.max_values.max(func.operand_stack_height());
        // Every value is on top once, when it is pushed.
        stack.vectors |= func.get_operand_type(0) == Some(Some(ValType::V128));
    }
    reader.finish_expression(&func.visitor(reader.original_position()))?;
    Ok(stack)
}

/// The deepest a function's blocks, loops and ifs may nest. Compiling a
/// function natively takes time that grows faster than its nesting (30,000
/// nested blocks took about 25 s to compile, 100,000 six minutes), so a
/// small file could otherwise stall whoever loads it; what compilers emit
/// nests far less (the built-in controllers' release builds reach 56). A
/// constant, not a setting: a shared link must not be able to raise it.
pub(crate) const MAX_NESTING_DEPTH: usize = 1_000;

/// How deeply the control instructions of a function body nest.
fn nesting_depth(body: &wasmparser::FunctionBody<'_>) -> Result<usize, BinaryReaderError> {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut operators = body.get_operators_reader()?;
    while !operators.eof() {
        match operators.read()? {
            Operator::Block { .. } | Operator::Loop { .. } | Operator::If { .. } | Operator::TryTable { .. } => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            // The function's own `end` takes it below zero; the validator
            // judges whether the ends balance.
            Operator::End => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(deepest)
}

/// A validator error, as the proposal it needs when that is why it failed.
fn refused(name: &str, err: BinaryReaderError) -> PluginError {
    let feature = err.missing_wasm_feature().and_then(|f| f.iter_names().next());
    match feature {
        Some((flag, _)) => PluginError::Feature {
            name: name.to_owned(),
            feature: flag.to_lowercase().replace('_', " "),
            offset: err.offset(),
        },
        None => PluginError::Invalid { name: name.to_owned(), reason: err.to_string() },
    }
}

/// The value of a segment's offset, if it is a constant (`i32.const`, the
/// only form a module without imported globals can use).
fn constant(expr: &ConstExpr<'_>) -> Option<u64> {
    let mut ops = expr.get_operators_reader();
    match (ops.read().ok()?, ops.read().ok()?) {
        (Operator::I32Const { value }, Operator::End) => Some(u64::from(value as u32)),
        _ => None,
    }
}

/// One private 32-bit memory, no larger than the cap to begin with; returns
/// its initial size in bytes. Runs before the validator, whose messages for
/// these cases are about proposals.
fn check_memory(name: &str, reader: MemorySectionReader<'_>, limits: &Limits) -> Result<u64, PluginError> {
    let problem = |problem: String| Err(PluginError::Memory { name: name.to_owned(), problem });
    if reader.count() > 1 {
        return problem(format!("declares {} memories, but a plugin has exactly one", reader.count()));
    }
    let Some(memory) = reader.into_iter().next() else { return Ok(0) };
    let memory = memory.map_err(|err| refused(name, err))?;
    if memory.shared {
        return problem("declares a shared memory, but plugin memory may not be shared (no threads)".into());
    }
    if memory.memory64 {
        return problem("declares a 64-bit memory, but plugin memory is 32-bit".into());
    }
    if memory.initial > limits.memory_pages() {
        return Err(PluginError::MemoryTooLarge {
            name: name.to_owned(),
            initial_bytes: memory.initial.saturating_mul(PAGE_BYTES),
            cap_bytes: limits.memory_pages() * PAGE_BYTES,
        });
    }
    Ok(memory.initial * PAGE_BYTES)
}

/// The ABI's exports, and the type of the one import allowed.
fn check_abi(
    name: &str,
    types: &Types,
    log_type: Option<u32>,
    exports: &[(String, ExternalKind, u32)],
) -> Result<(), PluginError> {
    let types = types.as_ref();
    let func_type = |id: CoreTypeId| types[id].unwrap_func();
    if let Some(ty) = log_type {
        let ty = func_type(types.core_type_at_in_module(ty));
        if ty.params() != [ValType::I32, ValType::I32] || !ty.results().is_empty() {
            return Err(PluginError::LogImportType { name: name.to_owned(), found: signature(ty) });
        }
    }
    let find = |export: &'static str, expected: &'static str| match exports.iter().find(|(n, ..)| n == export) {
        Some(&(_, kind, index)) => Ok((kind, index)),
        None => Err(PluginError::MissingExport { name: name.to_owned(), export, expected }),
    };
    let wrong = |export, expected, found| PluginError::ExportType { name: name.to_owned(), export, expected, found };
    let (kind, _) = find("memory", "a memory")?;
    if kind != ExternalKind::Memory {
        return Err(wrong("memory", "a memory", kind_name(kind).to_owned()));
    }
    for (export, params, results, expected) in FUNCTIONS {
        match find(export, expected)? {
            (ExternalKind::Func, index) => {
                let ty = func_type(types.core_function_at(index));
                if ty.params() != params || ty.results() != results {
                    return Err(wrong(export, expected, format!("a function {}", signature(ty))));
                }
            }
            (kind, _) => return Err(wrong(export, expected, kind_name(kind).to_owned())),
        }
    }
    Ok(())
}

/// `(i32, i32) -> i64`, as the ABI document writes types.
fn signature(ty: &FuncType) -> String {
    let list = |types: &[ValType]| types.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
    match ty.results() {
        [one] => format!("({}) -> {one}", list(ty.params())),
        results => format!("({}) -> ({})", list(ty.params()), list(results)),
    }
}

fn kind_name(kind: ExternalKind) -> &'static str {
    match kind {
        ExternalKind::Func | ExternalKind::FuncExact => "a function",
        ExternalKind::Table => "a table",
        ExternalKind::Memory => "a memory",
        ExternalKind::Global => "a global",
        ExternalKind::Tag => "a tag",
    }
}

/// What to do instead of an import a plugin may not have, by the toolchain
/// that put it there; empty when the module says nothing about it.
fn import_instead(module: &str) -> &'static str {
    if module.starts_with("wasi") {
        " (a WASI import: build for wasm32-unknown-unknown, not wasm32-wasip1, and use no clock, file or randomness)"
    } else if module == "__wbindgen_placeholder__" || module == "wbg" {
        " (a wasm-bindgen import: a plugin uses neither wasm-bindgen, js-sys nor web-sys)"
    } else {
        ""
    }
}
