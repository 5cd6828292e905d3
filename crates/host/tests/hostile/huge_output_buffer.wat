;; recon_handle allocates a 20 MiB output buffer and returns all of it: valid
;; JSON (an empty output, then spaces), but more than the host reads.
(module
  (memory (export "memory") 1)
  (data (i32.const 0x100) "{\"name\":\"hostile\",\"abiVersion\":1,\"watches\":[{\"kind\":\"Pod\"}]}")
  (func (export "recon_abi_version") (result i32) i32.const 1)
  (func (export "recon_alloc") (param i32) (result i32) i32.const 0x1000)
  ;; The manifest: (0x100 << 32) | 60.
  (func (export "recon_init") (param i32 i32) (result i64) i64.const 0x1000000003c)
  (data (i32.const 0x400) "{\"actions\":[]}")
  (func (export "recon_handle") (param i32 i32) (result i64)
    ;; 20 MiB from 1 MiB on: grow to 21 MiB (336 pages).
    (drop (memory.grow (i32.const 335)))
    (memory.fill (i32.const 0x100000) (i32.const 0x20) (i32.const 0x1400000))
    (memory.copy (i32.const 0x100000) (i32.const 0x400) (i32.const 14))
    ;; (0x100000 << 32) | 0x1400000
    i64.const 0x0010000001400000))
