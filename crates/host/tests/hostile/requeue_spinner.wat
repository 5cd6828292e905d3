;; recon_handle spends about 6,000,000 fuel and asks to be called again in
;; a millisecond, every time: each call is within its budget, but a
;; component doing this would cost a second of real time per simulated
;; millisecond at the default budget. Its virtual second's fuel runs out.
(module
  (memory (export "memory") 1)
  (data (i32.const 0x100) "{\"name\":\"hostile\",\"abiVersion\":1,\"watches\":[{\"kind\":\"Pod\"}]}")
  (data (i32.const 0x200) "{\"actions\":[{\"type\":\"requeueAfter\",\"key\":\"spin\",\"afterMs\":1}]}")
  (func (export "recon_abi_version") (result i32) i32.const 1)
  (func (export "recon_alloc") (param i32) (result i32) i32.const 0x1000)
  ;; The manifest: (0x100 << 32) | 60.
  (func (export "recon_init") (param i32 i32) (result i64) i64.const 0x1000000003c)
  (func (export "recon_handle") (param i32 i32) (result i64)
    (local $n i32)
    (local.set $n (i32.const 1000000))
    (loop $spin
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br_if $spin (local.get $n)))
    ;; The output: (0x200 << 32) | 62.
    i64.const 0x2000000003e))
