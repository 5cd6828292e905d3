;; recon_handle converts 1e10, out of an i32's range, with the trapping
;; conversion (`i32.trunc_f64_s`, not `_sat`). wasmtime names that trap an
;; integer overflow and V8 cannot tell it from a conversion of NaN: the host
;; makes it one trap, worded the same in every engine.
(module
  (memory (export "memory") 1)
  (data (i32.const 0x100) "{\"name\":\"hostile\",\"abiVersion\":1,\"watches\":[{\"kind\":\"Pod\"}]}")
  (func (export "recon_abi_version") (result i32) i32.const 1)
  (func (export "recon_alloc") (param i32) (result i32) i32.const 0x1000)
  ;; The manifest: (0x100 << 32) | 60.
  (func (export "recon_init") (param i32 i32) (result i64) i64.const 0x1000000003c)
  (func (export "recon_handle") (param i32 i32) (result i64)
    (drop (i32.trunc_f64_s (f64.const 1e10)))
    unreachable))
