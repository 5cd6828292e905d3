;; recon_handle returns text that is not JSON.
(module
  (memory (export "memory") 1)
  (data (i32.const 0x100) "{\"name\":\"hostile\",\"abiVersion\":1,\"watches\":[{\"kind\":\"Pod\"}]}")
  (func (export "recon_abi_version") (result i32) i32.const 1)
  (func (export "recon_alloc") (param i32) (result i32) i32.const 0x1000)
  ;; The manifest: (0x100 << 32) | 60.
  (func (export "recon_init") (param i32 i32) (result i64) i64.const 0x1000000003c)
  (data (i32.const 0x400) "not json")
  (func (export "recon_handle") (param i32 i32) (result i64)
    i64.const 0x0000040000000008))
