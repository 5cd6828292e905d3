;; recon_handle logs from outside its memory and with a 4 GiB length, then
;; returns an empty output: logging never crashes; the host logs the attempt.
(module
  (import "recon" "log" (func $log (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0x100) "{\"name\":\"hostile\",\"abiVersion\":1,\"watches\":[{\"kind\":\"Pod\"}]}")
  (func (export "recon_abi_version") (result i32) i32.const 1)
  (func (export "recon_alloc") (param i32) (result i32) i32.const 0x1000)
  ;; The manifest: (0x100 << 32) | 60.
  (func (export "recon_init") (param i32 i32) (result i64) i64.const 0x1000000003c)
  (data (i32.const 0x400) "{\"actions\":[]}")
  (func (export "recon_handle") (param i32 i32) (result i64)
    (call $log (i32.const 0xfffffff0) (i32.const 64))
    (call $log (i32.const 0x400) (i32.const -1))
    ;; (0x400 << 32) | 14
    i64.const 0x000004000000000e))
