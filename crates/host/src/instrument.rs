//! The rewrite that makes the limits engine-independent.
//!
//! Every defined function gets, in this order:
//!
//! - a **depth and stack** prologue: `recon_depth += 1` and `recon_stack +=`
//!   the frame's charge ([`crate::MAX_FRAME_BYTES`] says how a frame is
//!   charged), trap if either passes its limit; the body is wrapped in a
//!   block so that every way out (falling off the end, `return`, a branch to
//!   the function's label) passes the matching decrements. `return` becomes
//!   a branch to that block. The charge is an upper bound of the frame every
//!   engine reserves, so the budget runs out at the same call everywhere,
//!   before any engine's own stack does.
//! - a **fuel** charge at the start of every basic block: the number of
//!   instructions up to and including the block's last one is subtracted
//!   from the count. The count is checked, and the call traps if it is
//!   negative, at a function's first block, at the first block of every
//!   loop iteration and on the function's way out: each other block is
//!   reached from one of those by code without a cycle, so a call that ran
//!   out stops within one function's acyclic code, at the same instruction
//!   in every engine, and never returns. The function keeps the count in a local of its own, which an
//!   engine holds in a register: read from `recon_fuel` on entry and
//!   after every call, written back before every call, on every way out
//!   and just before the trap, so callees and the host see it as if every
//!   charge went to the global. (Charging and checking the global at
//!   every block cost about 3 µs of a 11 µs kubelet call; these two
//!   changes took two thirds of that away.) Blocks
//!   end at every instruction after which control may continue elsewhere
//!   (`loop`, `if`, `else`, `br`, `br_if`, `br_table`, `return`,
//!   `unreachable`) and at the `end` of a `block` or `if`, which branches can
//!   reach. `block` and the `end` of a `loop` do not end one: only falling
//!   through reaches what follows them. A block that is entered therefore
//!   runs to its end unless it traps, so the fuel charged is the number of
//!   instructions executed, a function of the module and the inputs alone.
//! - bulk memory and table instructions (`memory.fill`, `memory.copy`,
//!   `memory.init`, `table.*` likewise) also cost their length / 8, charged
//!   just before them, so that one instruction cannot do unbounded work.
//!
//! - a **NaN canonicalisation** after every floating-point instruction whose
//!   result may be a NaN with engine-chosen bits (arithmetic, `sqrt`, `min`,
//!   `max`, rounding, promotion, demotion, scalar and SIMD): a NaN result is
//!   replaced by the canonical quiet NaN (`0x7fc00000`, `0x7ff8000000000000`
//!   per lane). The WebAssembly specification leaves those bits to the engine
//!   (x86 gives negative NaNs, wasmtime canonicalises), so without this a
//!   plugin that looks at them could make a trace differ between engines.
//!
//! - a **float-to-integer guard** before every trapping conversion
//!   (`i32.trunc_f64_s` and the like): an operand out of the integer's range
//!   becomes NaN, so the conversion traps as one of NaN in every engine.
//!   wasmtime would call the out-of-range trap an integer overflow (the
//!   word it also uses for `i32.div_s` of `MIN` by -1), V8 cannot tell it
//!   from NaN; this way both report "converted an unrepresentable float to
//!   an integer", at the same instruction.
//!
//! Memory and table maxima are lowered to the caps, so `memory.grow` and
//! `table.grow` fail at the same size everywhere. The instrumentation's own
//! instructions are not charged.
//!
//! The rewrite makes functions larger and adds up to five locals; a
//! function that would then pass the engines' limits (7,654,321 bytes of
//! code, 50,000 locals with the parameters) is refused as too large, as is a
//! module that would pass [`Limits::max_module_bytes`].

use wasm_encoder::reencode::{Error, Reencode, utils};
use wasm_encoder::{
    BlockType, CodeSection, ConstExpr, CustomSection, ExportKind, ExportSection, Function, FunctionSection,
    GlobalSection, GlobalType, Ieee32, Ieee64, InstructionSink, MemoryType, SectionId, TableType, TypeSection, ValType,
};
use wasmparser::{CompositeInnerType, Operator};

use crate::validate::OperandStack;
use crate::{DEPTH_EXPORT, FUEL_EXPORT, Limits, MAX_FRAME_BYTES, STACK_EXPORT};

/// The most elements a table may have (validation refuses a larger initial
/// size; the maximum is lowered to this).
pub(crate) const TABLE_ELEMENTS: u64 = 10_000;

/// The most bytes of code one function may have in every engine (V8's limit,
/// which wasmparser shares).
pub(crate) const MAX_FUNCTION_BYTES: usize = 7_654_321;

/// The most locals, parameters included, one function may have in every
/// engine (V8's limit, which wasmparser shares).
pub(crate) const MAX_FUNCTION_LOCALS: u64 = 50_000;

/// What every frame is charged besides its slots: what V8 and Cranelift
/// keep in a frame's header (return address, frame pointer, instance, saved
/// registers; V8's baseline compiler takes about 56 bytes, measured).
const FRAME_HEADER_BYTES: u64 = 64;

/// What a slot of a frame is charged: a parameter, a local or an operand
/// stack value of a scalar type or a reference. A `v128` takes two.
const SLOT_BYTES: u64 = 8;

/// The most values the instrumentation pushes above a function's own
/// operand stack (the NaN canonicalisation and the conversion guard take
/// an operand and hold up to five values in its place).
const METERING_OPERANDS: u64 = 4;

/// Why a module could not be instrumented.
#[derive(Debug)]
pub(crate) enum Failure {
    /// It would pass an engine's limit or [`Limits::max_module_bytes`] once
    /// instrumented: the plugin's problem, as a predicate ("would be ...").
    TooLarge(String),
    /// Anything else: a host bug.
    Bug(String),
}

/// Rewrites a validated plugin; see the module docs. `operand_stacks` is
/// what validation learnt of each defined function's operand stack.
pub(crate) fn instrument(bytes: &[u8], limits: &Limits, operand_stacks: &[OperandStack]) -> Result<Vec<u8>, Failure> {
    // Function indices count imported functions first.
    let mut imported = 0;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        if let Ok(wasmparser::Payload::ImportSection(reader)) = payload {
            let imports = reader.into_imports().filter_map(Result::ok);
            imported += imports.filter(|i| matches!(i.ty, wasmparser::TypeRef::Func(_))).count();
        }
    }
    let mut rewriter = Rewriter {
        limits,
        operand_stacks,
        types: Vec::new(),
        functions: Vec::new(),
        bodies: 0,
        imported,
        meters: None,
        too_large: None,
    };
    let mut module = wasm_encoder::Module::new();
    let parsed = rewriter.parse_core_module(&mut module, wasmparser::Parser::new(0), bytes);
    if let Some(problem) = rewriter.too_large {
        return Err(Failure::TooLarge(problem));
    }
    parsed.map_err(|e| Failure::Bug(e.to_string()))?;
    let bytes = module.finish();
    if bytes.len() as u64 > limits.max_module_bytes {
        let raise = crate::limits::raised_by(recon_scenario::PluginSetting::MaxModuleBytes, limits.max_module_bytes);
        return Err(Failure::TooLarge(format!(
            "would be {} bytes once metered, above the limit of {} bytes; {raise}",
            bytes.len(),
            limits.max_module_bytes
        )));
    }
    Ok(bytes)
}

/// What the rewrite of one module has learnt so far.
struct Rewriter<'a> {
    limits: &'a Limits,
    /// Per defined function, what validation learnt of its operand stack.
    operand_stacks: &'a [OperandStack],
    /// Per type index: its parameters and the block type that wraps the body
    /// of a function of that type (no parameters, the same results).
    types: Vec<(Params, BlockType)>,
    /// The type index of each defined function.
    functions: Vec<u32>,
    /// How many function bodies have been rewritten.
    bodies: usize,
    /// How many functions the module imports: the first body is function
    /// number `imported`.
    imported: usize,
    /// The meters' globals, once they exist.
    meters: Option<MeterGlobals>,
    /// Set when a rewritten function passes an engine's limit.
    too_large: Option<String>,
}

/// A function type's parameters, as the rewrite counts them.
#[derive(Clone, Copy, Debug)]
struct Params {
    /// How many there are: the first local is number `count`.
    count: u32,
    /// The frame slots they take (a `v128` takes two).
    slots: u64,
}

/// The indices of the meters' globals.
#[derive(Clone, Copy, Debug)]
struct MeterGlobals {
    fuel: u32,
    depth: u32,
    stack: u32,
}

/// The frame slots a value of type `ty` takes.
fn slots(ty: ValType) -> u64 {
    if ty == ValType::V128 { 2 } else { 1 }
}

impl Rewriter<'_> {
    fn add_meters(&mut self, globals: &mut GlobalSection) {
        let fuel = globals.len();
        let meter = |val_type| GlobalType { val_type, mutable: true, shared: false };
        // Fuel starts at zero: an export called before the host sets it traps.
        globals.global(meter(ValType::I64), &ConstExpr::i64_const(0));
        globals.global(meter(ValType::I32), &ConstExpr::i32_const(0));
        globals.global(meter(ValType::I32), &ConstExpr::i32_const(0));
        self.meters = Some(MeterGlobals { fuel, depth: fuel + 1, stack: fuel + 2 });
    }

    fn meters(&self) -> Result<MeterGlobals, Error<String>> {
        self.meters.ok_or_else(|| Error::UserError("code or exports before the meters exist".into()))
    }
}

impl Reencode for Rewriter<'_> {
    type Error = String;

    fn parse_type_section(
        &mut self,
        types: &mut TypeSection,
        section: wasmparser::TypeSectionReader<'_>,
    ) -> Result<(), Error<String>> {
        // Results of the types whose bodies need a block type of their own.
        let mut multi = Vec::new();
        for group in section {
            let group = group?;
            for ty in group.types() {
                let CompositeInnerType::Func(func) = &ty.composite_type.inner else {
                    return Err(Error::UserError("a type that is not a function type".into()));
                };
                let wrapper = match func.results() {
                    [] => BlockType::Empty,
                    [one] => BlockType::Result(self.val_type(*one)?),
                    results => {
                        multi.push(self.val_types(results.to_vec())?);
                        BlockType::FunctionType(u32::MAX) // numbered below
                    }
                };
                let params = Params {
                    count: func.params().len() as u32,
                    slots: func.params().iter().map(|ty| if *ty == wasmparser::ValType::V128 { 2 } else { 1 }).sum(),
                };
                self.types.push((params, wrapper));
            }
            self.parse_recursive_type_group(types.ty(), group)?;
        }
        // Multi-value bodies are wrapped in a block of type `[] -> results`,
        // appended after the module's own types so no index moves.
        let mut next = self.types.len() as u32;
        for (_, wrapper) in &mut self.types {
            if let BlockType::FunctionType(index) = wrapper {
                *index = next;
                next += 1;
            }
        }
        for results in multi {
            types.ty().function([], results);
        }
        Ok(())
    }

    fn parse_function_section(
        &mut self,
        functions: &mut FunctionSection,
        section: wasmparser::FunctionSectionReader<'_>,
    ) -> Result<(), Error<String>> {
        for ty in section.clone() {
            self.functions.push(ty?);
        }
        utils::parse_function_section(self, functions, section)
    }

    fn memory_type(&mut self, ty: wasmparser::MemoryType) -> Result<MemoryType, Error<String>> {
        let mut ty = utils::memory_type(self, ty);
        let cap = self.limits.memory_pages();
        ty.maximum = Some(ty.maximum.map_or(cap, |max| max.min(cap)));
        Ok(ty)
    }

    fn table_type(&mut self, ty: wasmparser::TableType) -> Result<TableType, Error<String>> {
        let mut ty = utils::table_type(self, ty)?;
        let cap = ty.minimum.max(TABLE_ELEMENTS);
        ty.maximum = Some(ty.maximum.map_or(cap, |max| max.min(cap)));
        Ok(ty)
    }

    fn parse_global_section(
        &mut self,
        globals: &mut GlobalSection,
        section: wasmparser::GlobalSectionReader<'_>,
    ) -> Result<(), Error<String>> {
        utils::parse_global_section(self, globals, section)?;
        self.add_meters(globals);
        Ok(())
    }

    fn intersperse_section_hook(
        &mut self,
        module: &mut wasm_encoder::Module,
        _after: Option<SectionId>,
        before: Option<SectionId>,
    ) -> Result<(), Error<String>> {
        // A module without globals gets a global section for the meters, in
        // its place before the exports (which every plugin has).
        if self.meters.is_none() && before == Some(SectionId::Export) {
            let mut globals = GlobalSection::new();
            self.add_meters(&mut globals);
            module.section(&globals);
        }
        Ok(())
    }

    fn parse_export_section(
        &mut self,
        exports: &mut ExportSection,
        section: wasmparser::ExportSectionReader<'_>,
    ) -> Result<(), Error<String>> {
        utils::parse_export_section(self, exports, section)?;
        let meters = self.meters()?;
        exports
            .export(FUEL_EXPORT, ExportKind::Global, meters.fuel)
            .export(DEPTH_EXPORT, ExportKind::Global, meters.depth)
            .export(STACK_EXPORT, ExportKind::Global, meters.stack);
        Ok(())
    }

    fn parse_custom_section(
        &mut self,
        module: &mut wasm_encoder::Module,
        section: wasmparser::CustomSectionReader<'_>,
    ) -> Result<(), Error<String>> {
        // Keep the names (engines use them in stack traces), copied as they
        // are; drop debug info and the like, which nothing reads at run time
        // and which can be most of the file.
        if section.name() == "name" {
            module.section(&CustomSection { name: "name".into(), data: section.data().into() });
        }
        Ok(())
    }

    fn parse_function_body(
        &mut self,
        code: &mut CodeSection,
        body: wasmparser::FunctionBody<'_>,
    ) -> Result<(), Error<String>> {
        let MeterGlobals { fuel, depth, stack } = self.meters()?;
        let no_type = || Error::UserError("a function body without a type".into());
        let index = self.imported + self.bodies;
        let ty = *self.functions.get(self.bodies).ok_or_else(no_type)?;
        let (params, wrapper) = *self.types.get(ty as usize).ok_or_else(no_type)?;
        let operand_stack = *self.operand_stacks.get(self.bodies).ok_or_else(no_type)?;
        self.bodies += 1;

        let mut locals = Vec::new();
        let mut next = params.count; // ends as the index of the first new local
        for local in body.get_locals_reader()? {
            let (count, ty) = local?;
            next += count;
            locals.push((count, self.val_type(ty)?));
        }
        let ops = body.get_operators_reader()?.into_iter().collect::<Result<Vec<_>, _>>()?;
        let costs = block_costs(&ops);
        // Scratch locals, one per type the rewrite needs in this function.
        let mut scratch = |needed: bool, ty: ValType| {
            needed.then(|| {
                locals.push((1, ty));
                next += 1;
                next - 1
            })
        };
        let fuel_local = scratch(true, ValType::I64).expect("always needed");
        let bulk_scratch = scratch(ops.iter().any(is_bulk), ValType::I32);
        let f32_scratch = scratch(
            ops.iter().any(|op| nan_kind(op) == Some(Nan::F32) || integer_range(op).is_some_and(|r| !r.from_f64)),
            ValType::F32,
        );
        let f64_scratch = scratch(
            ops.iter().any(|op| nan_kind(op) == Some(Nan::F64) || integer_range(op).is_some_and(|r| r.from_f64)),
            ValType::F64,
        );
        let v128_scratch =
            scratch(ops.iter().any(|op| matches!(nan_kind(op), Some(Nan::F32x4 | Nan::F64x2))), ValType::V128);
        if u64::from(next) > MAX_FUNCTION_LOCALS {
            self.too_large = Some(format!(
                "has a function (index {}) with {} locals and parameters once metered, above the engines' limit of \
                 {MAX_FUNCTION_LOCALS}",
                index, next
            ));
            return Err(Error::UserError("too large".into()));
        }
        let frame = frame_bytes(params.slots, &locals, operand_stack);
        if frame > u64::from(MAX_FRAME_BYTES) {
            self.too_large = Some(format!(
                "has a function (index {index}) whose frame takes {frame} bytes of stack once metered, above the \
                 limit of {MAX_FRAME_BYTES} bytes per frame"
            ));
            return Err(Error::UserError("too large".into()));
        }

        let mut f = Function::new(locals);
        f.instructions()
            .global_get(depth)
            .i32_const(1)
            .i32_add()
            .global_set(depth)
            .global_get(stack)
            .i32_const(frame as i32)
            .i32_add()
            .global_set(stack)
            // Compared unsigned, so any u32 limit works.
            .global_get(depth)
            .i32_const(self.limits.max_call_depth as i32)
            .i32_gt_u()
            .global_get(stack)
            .i32_const(self.limits.stack_bytes as i32)
            .i32_gt_u()
            .i32_or()
            .if_(BlockType::Empty)
            .unreachable()
            .end()
            .global_get(fuel)
            .local_set(fuel_local)
            .block(wrapper);
        let mut open = 0; // constructs open inside the body
        let meter = Fuel { global: fuel, local: fuel_local };
        // Only a function's first block, the first block of each loop
        // iteration and the way out check the count: every other block is
        // reached from one of those by code without a cycle, so a call that
        // ran out stops within one function's acyclic code, at the same
        // instruction in every engine.
        let mut check = true;
        for (op, cost) in ops.into_iter().zip(costs) {
            if cost > 0 {
                meter.charge(&mut f, check, |sink| {
                    sink.i64_const(cost as i64);
                });
            }
            check = matches!(op, Operator::Loop { .. });
            if let Some(scratch) = bulk_scratch.filter(|_| is_bulk(&op)) {
                // The length is the operand on top of the stack: keep it there.
                f.instructions().local_tee(scratch);
                // Checked: the instruction's work is what the charge pays for.
                meter.charge(&mut f, true, |sink| {
                    sink.local_get(scratch).i64_extend_i32_u().i64_const(3).i64_shr_u();
                });
            }
            // The callee charges the global: hand it the count, take it back.
            let calls = matches!(op, Operator::Call { .. } | Operator::CallIndirect { .. });
            if calls {
                meter.store(&mut f);
            }
            if let Some(range) = integer_range(&op) {
                guard_conversion(&mut f, if range.from_f64 { f64_scratch } else { f32_scratch }, range);
            }
            let nan = nan_kind(&op);
            match op {
                Operator::Block { .. } | Operator::Loop { .. } | Operator::If { .. } => open += 1,
                Operator::End if open > 0 => open -= 1,
                _ => {}
            }
            if let Operator::Return = op {
                // To the wrapper block, so the exit passes the decrement.
                f.instructions().br(open);
            } else {
                f.instruction(&self.instruction(op)?);
            }
            if calls {
                meter.load(&mut f);
            }
            match nan {
                Some(Nan::F32) => canonicalise(&mut f, f32_scratch, Nan::F32),
                Some(Nan::F64) => canonicalise(&mut f, f64_scratch, Nan::F64),
                Some(kind) => canonicalise(&mut f, v128_scratch, kind),
                None => {}
            }
        }
        // The last `end` closed the wrapper block: a call that ran out in
        // this function's last blocks stops here, before its caller goes on.
        meter.check(&mut f);
        meter.store(&mut f);
        f.instructions()
            .global_get(depth)
            .i32_const(1)
            .i32_sub()
            .global_set(depth)
            .global_get(stack)
            .i32_const(frame as i32)
            .i32_sub()
            .global_set(stack)
            .end();
        if f.byte_len() > MAX_FUNCTION_BYTES {
            self.too_large = Some(format!(
                "has a function (index {}) of {} bytes that would be {} bytes once metered, above the engines' \
                 limit of {MAX_FUNCTION_BYTES} bytes per function",
                index,
                body.range().len(),
                f.byte_len()
            ));
            return Err(Error::UserError("too large".into()));
        }
        code.function(&f);
        Ok(())
    }
}

/// What a frame is charged (see [`crate::MAX_FRAME_BYTES`]): its header, its
/// parameters' and locals' slots (the metering's scratch locals included)
/// and its operand stack at its highest, with room for the metering's own
/// operands.
fn frame_bytes(param_slots: u64, locals: &[(u32, ValType)], operands: OperandStack) -> u64 {
    let local_slots: u64 = locals.iter().map(|&(count, ty)| u64::from(count) * slots(ty)).sum();
    let operand_bytes = if operands.vectors { 2 * SLOT_BYTES } else { SLOT_BYTES };
    FRAME_HEADER_BYTES
        + (param_slots + local_slots) * SLOT_BYTES
        + (u64::from(operands.max_values) + METERING_OPERANDS) * operand_bytes
}

/// The operands a trapping float-to-integer conversion accepts: those
/// above `low` (or equal to it, if `low_inclusive`) and below `high`, the
/// bounds being exact in the float type.
#[derive(Clone, Copy, Debug, PartialEq)]
struct IntegerRange {
    /// Whether the operand is an `f64` (else an `f32`).
    from_f64: bool,
    low: f64,
    low_inclusive: bool,
    high: f64,
}

/// The range of a trapping float-to-integer conversion (the WebAssembly
/// specification's `trunc`: it traps on NaN and on a value whose integer
/// part does not fit), or `None` for any other instruction. A signed
/// N-bit conversion accepts -2^(N-1)-1 < x < 2^(N-1), written with `>=
/// -2^(N-1)` where -2^(N-1)-1 is not exact in the float type; an unsigned
/// one -1 < x < 2^N.
fn integer_range(op: &Operator<'_>) -> Option<IntegerRange> {
    use Operator as O;
    let (from_f64, low, low_inclusive, high) = match op {
        O::I32TruncF32S => (false, -2_147_483_648.0, true, 2_147_483_648.0),
        O::I32TruncF64S => (true, -2_147_483_649.0, false, 2_147_483_648.0),
        O::I32TruncF32U => (false, -1.0, false, 4_294_967_296.0),
        O::I32TruncF64U => (true, -1.0, false, 4_294_967_296.0),
        O::I64TruncF32S => (false, -9_223_372_036_854_775_808.0, true, 9_223_372_036_854_775_808.0),
        O::I64TruncF64S => (true, -9_223_372_036_854_775_808.0, true, 9_223_372_036_854_775_808.0),
        O::I64TruncF32U => (false, -1.0, false, 18_446_744_073_709_551_616.0),
        O::I64TruncF64U => (true, -1.0, false, 18_446_744_073_709_551_616.0),
        _ => return None,
    };
    Some(IntegerRange { from_f64, low, low_inclusive, high })
}

/// Replaces the operand on top of the stack, about to be converted to an
/// integer, by NaN if it is outside `range`, through `scratch`, a local of
/// its type: `select(x, NaN, low < x && x < high)`. NaN fails both
/// comparisons and stays NaN.
fn guard_conversion(f: &mut Function, scratch: Option<u32>, range: IntegerRange) {
    // The scratch local exists whenever a conversion from its type does.
    let Some(t) = scratch else { return };
    let mut sink = f.instructions();
    sink.local_tee(t);
    if range.from_f64 {
        sink.f64_const(Ieee64::new(CANONICAL_F64)).local_get(t).f64_const(Ieee64::from(range.low));
        if range.low_inclusive {
            sink.f64_ge()
        } else {
            sink.f64_gt()
        };
        sink.local_get(t).f64_const(Ieee64::from(range.high)).f64_lt();
    } else {
        // The bounds are exact in f32 too.
        let (low, high) = (range.low as f32, range.high as f32);
        sink.f32_const(Ieee32::new(CANONICAL_F32)).local_get(t).f32_const(Ieee32::from(low));
        if range.low_inclusive {
            sink.f32_ge()
        } else {
            sink.f32_gt()
        };
        sink.local_get(t).f32_const(Ieee32::from(high)).f32_lt();
    }
    sink.i32_and().select();
}

/// The result types whose NaNs are canonicalised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Nan {
    F32,
    F64,
    F32x4,
    F64x2,
}

/// Whether `op` may produce a NaN whose bits the engine chooses, and of
/// which type. Not the sign and bit operations (`neg`, `abs`, `copysign`,
/// loads, `reinterpret`, `pmin`/`pmax`), which move bits deterministically,
/// nor conversions from integers, which never give NaN.
fn nan_kind(op: &Operator<'_>) -> Option<Nan> {
    use Operator as O;
    match op {
        O::F32Add
        | O::F32Sub
        | O::F32Mul
        | O::F32Div
        | O::F32Sqrt
        | O::F32Min
        | O::F32Max
        | O::F32Ceil
        | O::F32Floor
        | O::F32Trunc
        | O::F32Nearest
        | O::F32DemoteF64 => Some(Nan::F32),
        O::F64Add
        | O::F64Sub
        | O::F64Mul
        | O::F64Div
        | O::F64Sqrt
        | O::F64Min
        | O::F64Max
        | O::F64Ceil
        | O::F64Floor
        | O::F64Trunc
        | O::F64Nearest
        | O::F64PromoteF32 => Some(Nan::F64),
        O::F32x4Add
        | O::F32x4Sub
        | O::F32x4Mul
        | O::F32x4Div
        | O::F32x4Sqrt
        | O::F32x4Min
        | O::F32x4Max
        | O::F32x4Ceil
        | O::F32x4Floor
        | O::F32x4Trunc
        | O::F32x4Nearest
        | O::F32x4DemoteF64x2Zero => Some(Nan::F32x4),
        O::F64x2Add
        | O::F64x2Sub
        | O::F64x2Mul
        | O::F64x2Div
        | O::F64x2Sqrt
        | O::F64x2Min
        | O::F64x2Max
        | O::F64x2Ceil
        | O::F64x2Floor
        | O::F64x2Trunc
        | O::F64x2Nearest
        | O::F64x2PromoteLowF32x4 => Some(Nan::F64x2),
        _ => None,
    }
}

/// The canonical quiet NaNs, positive, with no payload.
const CANONICAL_F32: u32 = 0x7fc0_0000;
const CANONICAL_F64: u64 = 0x7ff8_0000_0000_0000;

/// Replaces the value on top of the stack, of type `kind`, by the canonical
/// NaN if it is a NaN (per lane for vectors), through `scratch`, a local of
/// its type. `x != x` holds exactly for NaNs.
fn canonicalise(f: &mut Function, scratch: Option<u32>, kind: Nan) {
    // The scratch local exists whenever an instruction of its kind does.
    let Some(t) = scratch else { return };
    let mut sink = f.instructions();
    sink.local_set(t);
    match kind {
        Nan::F32 => sink.f32_const(Ieee32::new(CANONICAL_F32)),
        Nan::F64 => sink.f64_const(Ieee64::new(CANONICAL_F64)),
        Nan::F32x4 => sink.v128_const(i128::from_le_bytes(lanes32(CANONICAL_F32))),
        Nan::F64x2 => sink.v128_const(i128::from_le_bytes(lanes64(CANONICAL_F64))),
    };
    sink.local_get(t).local_get(t).local_get(t);
    match kind {
        Nan::F32 => sink.f32_ne().select(),
        Nan::F64 => sink.f64_ne().select(),
        Nan::F32x4 => sink.f32x4_ne().v128_bitselect(),
        Nan::F64x2 => sink.f64x2_ne().v128_bitselect(),
    };
}

/// Four lanes of `lane`, as the little-endian bytes of a `v128.const`.
fn lanes32(lane: u32) -> [u8; 16] {
    let mut bytes = [0; 16];
    bytes.chunks_mut(4).for_each(|chunk| chunk.copy_from_slice(&lane.to_le_bytes()));
    bytes
}

/// Two lanes of `lane`, as the little-endian bytes of a `v128.const`.
fn lanes64(lane: u64) -> [u8; 16] {
    let mut bytes = [0; 16];
    bytes.chunks_mut(8).for_each(|chunk| chunk.copy_from_slice(&lane.to_le_bytes()));
    bytes
}

/// A function's fuel counter: the exported global `recon_fuel`, which
/// callees and the host read, and the function's own copy in a local,
/// which its charges use.
#[derive(Clone, Copy)]
struct Fuel {
    global: u32,
    local: u32,
}

impl Fuel {
    /// Emits `fuel -= amount` on the local, where `amount` pushes an i64,
    /// and, if `check`, [`Fuel::check`].
    fn charge(self, f: &mut Function, check: bool, amount: impl FnOnce(&mut InstructionSink<'_>)) {
        let mut sink = f.instructions();
        sink.local_get(self.local);
        amount(&mut sink);
        sink.i64_sub().local_set(self.local);
        if check {
            self.check(f);
        }
    }

    /// Emits `if fuel < 0 { recon_fuel = fuel; unreachable }`. The global
    /// gets the negative count before the trap: that is how the host tells
    /// running out of fuel from other traps.
    fn check(self, f: &mut Function) {
        let mut sink = f.instructions();
        sink.local_get(self.local).i64_const(0).i64_lt_s().if_(BlockType::Empty);
        sink.local_get(self.local).global_set(self.global).unreachable().end();
    }

    /// Emits `recon_fuel = fuel`.
    fn store(self, f: &mut Function) {
        f.instructions().local_get(self.local).global_set(self.global);
    }

    /// Emits `fuel = recon_fuel`.
    fn load(self, f: &mut Function) {
        f.instructions().global_get(self.global).local_set(self.local);
    }
}

fn is_bulk(op: &Operator<'_>) -> bool {
    matches!(
        op,
        Operator::MemoryFill { .. }
            | Operator::MemoryCopy { .. }
            | Operator::MemoryInit { .. }
            | Operator::TableFill { .. }
            | Operator::TableCopy { .. }
            | Operator::TableInit { .. }
    )
}

/// For each instruction of a function body (ending with the function's
/// `end`): the fuel to charge just before it, which is the length of the
/// basic block it starts, or 0 if it does not start one.
pub(crate) fn block_costs(ops: &[Operator<'_>]) -> Vec<u64> {
    let mut costs = vec![0; ops.len()];
    let mut loops = Vec::new(); // per open construct: is it a loop?
    let mut start = 0;
    for (i, op) in ops.iter().enumerate() {
        let ends_block = match op {
            Operator::Block { .. } => {
                loops.push(false);
                false
            }
            Operator::Loop { .. } => {
                loops.push(true);
                true // the next instruction is a branch target
            }
            Operator::If { .. } => {
                loops.push(false);
                true
            }
            // Branches reach the end of a block or if, but not of a loop;
            // `None` is the function's end.
            Operator::End => !loops.pop().unwrap_or(false),
            Operator::Else
            | Operator::Br { .. }
            | Operator::BrIf { .. }
            | Operator::BrTable { .. }
            | Operator::Return
            | Operator::Unreachable => true,
            _ => false,
        };
        if ends_block {
            costs[start] = (i + 1 - start) as u64;
            start = i + 1;
        }
    }
    costs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The operators of the first function body in `wat`.
    fn body_costs(wat: &str) -> Vec<(String, u64)> {
        let bytes = wat::parse_str(wat).unwrap();
        for payload in wasmparser::Parser::new(0).parse_all(&bytes) {
            if let wasmparser::Payload::CodeSectionEntry(body) = payload.unwrap() {
                let ops: Vec<_> = body.get_operators_reader().unwrap().into_iter().map(Result::unwrap).collect();
                let names = ops.iter().map(|op| format!("{op:?}").split([' ', '{']).next().unwrap().to_owned());
                return names.zip(block_costs(&ops)).collect();
            }
        }
        panic!("no function body");
    }

    fn charged(costs: &[(String, u64)]) -> Vec<(&str, u64)> {
        costs.iter().filter(|(_, c)| *c > 0).map(|(n, c)| (n.as_str(), *c)).collect()
    }

    #[test]
    fn conversion_bounds_are_exact_in_the_operand_type_and_only_trapping_conversions_are_guarded() {
        use Operator as O;
        let trapping = [
            O::I32TruncF32S,
            O::I32TruncF32U,
            O::I32TruncF64S,
            O::I32TruncF64U,
            O::I64TruncF32S,
            O::I64TruncF32U,
            O::I64TruncF64S,
            O::I64TruncF64U,
        ];
        for op in &trapping {
            let range = integer_range(op).unwrap();
            if !range.from_f64 {
                assert_eq!(f64::from(range.low as f32), range.low, "{op:?}");
                assert_eq!(f64::from(range.high as f32), range.high, "{op:?}");
            }
            // A low bound is inclusive exactly where the exclusive one is not exact.
            assert_eq!(range.low_inclusive, range.low != -1.0 && range.low != -2_147_483_649.0, "{op:?}");
        }
        assert_eq!(integer_range(&O::I32TruncSatF64S), None);
        assert_eq!(integer_range(&O::F64Trunc), None);
    }

    #[test]
    fn straight_line_code_is_one_block_charged_at_entry() {
        let costs = body_costs("(module (func (result i32) i32.const 1 i32.const 2 i32.add))");
        assert_eq!(charged(&costs), [("I32Const", 4)]);
    }

    #[test]
    fn a_loop_body_is_charged_on_every_iteration_and_its_end_falls_through() {
        // entry: local.get, loop | body: local.get, i32.eqz, br_if | after
        // br_if: local.get i32.const i32.sub local.set br | loop end + tail
        let costs = body_costs(
            "(module (func (param i32) local.get 0 drop
               (loop local.get 0 i32.eqz br_if 1 local.get 0 i32.const 1 i32.sub local.set 0 br 0)
               nop))",
        );
        assert_eq!(
            charged(&costs),
            [("LocalGet", 3), ("LocalGet", 3), ("LocalGet", 5), ("End", 3)],
            "the loop's end, the nop and the function's end are one block: {costs:?}"
        );
    }

    #[test]
    fn block_does_not_end_a_block_but_its_end_does() {
        let costs = body_costs("(module (func (block nop (br_if 0 (i32.const 1))) nop))");
        // block, nop, i32.const, br_if | end(block) | nop, end
        assert_eq!(charged(&costs), [("Block", 4), ("End", 1), ("Nop", 2)]);
    }

    #[test]
    fn if_and_else_arms_are_blocks_of_their_own() {
        let costs = body_costs("(module (func (param i32) (if (local.get 0) (then nop nop) (else nop)) nop))");
        // local.get, if | nop, nop, else | nop, end(if) | nop, end
        assert_eq!(charged(&costs), [("LocalGet", 2), ("Nop", 3), ("Nop", 2), ("Nop", 2)]);
    }
}
