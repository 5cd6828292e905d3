;; recon_handle computes NaNs whose bits the WebAssembly specification leaves
;; to the engine (x86 gives negative NaNs, payloads propagate) and answers
;; according to their bits. The host canonicalises every such NaN, so it
;; answers the same in every engine: an empty output.
(module
  (memory (export "memory") 1)
  (data (i32.const 0x100) "{\"name\":\"hostile\",\"abiVersion\":1,\"watches\":[{\"kind\":\"Pod\"}]}")
  (func (export "recon_abi_version") (result i32) i32.const 1)
  (func (export "recon_alloc") (param i32) (result i32) i32.const 0x1000)
  ;; The manifest: (0x100 << 32) | 60.
  (func (export "recon_init") (param i32 i32) (result i64) i64.const 0x1000000003c)
  (data (i32.const 0x400) "{\"actions\":[]}")
  (data (i32.const 0x480) "{\"actions\":[{\"type\":\"requeueAfter\",\"key\":\"nan bits differ\",\"afterMs\":1000}]}")
  (func (export "recon_handle") (param i32 i32) (result i64)
    (i32.and (i32.and (i32.and
      (i32.and
        ;; 0/0
        (i64.eq (i64.reinterpret_f64 (f64.div (f64.const 0) (f64.const 0))) (i64.const 0x7ff8000000000000))
        ;; sqrt(-1)
        (i32.eq (i32.reinterpret_f32 (f32.sqrt (f32.const -1))) (i32.const 0x7fc00000)))
      (i32.and
        ;; a payload in an input NaN, and a negative NaN
        (i64.eq (i64.reinterpret_f64 (f64.add (f64.const nan:0x4) (f64.const 1))) (i64.const 0x7ff8000000000000))
        (i32.eq (i32.reinterpret_f32 (f32.mul (f32.const -nan) (f32.const 1))) (i32.const 0x7fc00000))))
      (i32.and
        ;; promotion of a NaN with a payload
        (i64.eq (i64.reinterpret_f64 (f64.promote_f32 (f32.const nan:0x200000))) (i64.const 0x7ff8000000000000))
        ;; SIMD lanes
        (i64.eq (i64x2.extract_lane 1 (f64x2.div (v128.const f64x2 1 0) (v128.const f64x2 1 0)))
                (i64.const 0x7ff8000000000000))))
      (i32.eq (i32x4.extract_lane 3 (f32x4.sqrt (v128.const f32x4 1 1 1 -1))) (i32.const 0x7fc00000)))
    (if (result i64)
      (then i64.const 0x000004000000000e)   ;; (0x400 << 32) | 14
      (else i64.const 0x000004800000004c)))) ;; (0x480 << 32) | 76
