;; The smallest well-behaved plugin: a static manifest, no actions.
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"name\":\"minimal\",\"abiVersion\":1}")
  (data (i32.const 64) "{\"actions\":[]}")
  (func (export "recon_abi_version") (result i32) i32.const 1)
  ;; Every input goes to the same buffer: the host copies a result out
  ;; before the next call.
  (func (export "recon_alloc") (param i32) (result i32) i32.const 1024)
  ;; (16 << 32) | 33
  (func (export "recon_init") (param i32 i32) (result i64) i64.const 0x1000000021)
  ;; (64 << 32) | 14
  (func (export "recon_handle") (param i32 i32) (result i64) i64.const 0x400000000e))
