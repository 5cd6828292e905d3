;; recon_handle deletes a StatefulSet, a kind its manifest does not declare,
;; and a Pod, a kind it may only create: the API server refuses both.
(module
  (memory (export "memory") 1)
  (data (i32.const 0x100) "{\"name\":\"hostile\",\"abiVersion\":1,\"watches\":[{\"kind\":\"Pod\"}],\"writes\":[{\"kind\":\"Pod\",\"verbs\":[\"create\"]}]}")
  (data (i32.const 0x400) "{\"actions\":[{\"type\":\"delete\",\"key\":{\"kind\":\"StatefulSet\",\"namespace\":\"default\",\"name\":\"web\"}},{\"type\":\"delete\",\"key\":{\"kind\":\"Pod\",\"namespace\":\"default\",\"name\":\"web-0\"}}]}")
  (func (export "recon_abi_version") (result i32) i32.const 1)
  (func (export "recon_alloc") (param i32) (result i32) i32.const 0x1000)
  ;; (0x100 << 32) | 105
  (func (export "recon_init") (param i32 i32) (result i64) i64.const 0x10000000069)
  ;; (0x400 << 32) | 171
  (func (export "recon_handle") (param i32 i32) (result i64) i64.const 0x400000000ab))
