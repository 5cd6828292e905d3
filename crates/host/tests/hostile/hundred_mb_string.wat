;; recon_handle returns valid JSON holding a 100 MiB string: a pod whose name
;; is 104,857,600 letters. (Its case raises the memory cap so that it fits.)
(module
  (memory (export "memory") 1)
  (data (i32.const 0x100) "{\"name\":\"hostile\",\"abiVersion\":1,\"watches\":[{\"kind\":\"Pod\"}]}")
  (func (export "recon_abi_version") (result i32) i32.const 1)
  (func (export "recon_alloc") (param i32) (result i32) i32.const 0x1000)
  ;; The manifest: (0x100 << 32) | 60.
  (func (export "recon_init") (param i32 i32) (result i64) i64.const 0x1000000003c)
  (data (i32.const 0x400) "{\"actions\":[{\"type\":\"create\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"")
  (data (i32.const 0x480) "\"}}}]}")
  (func (export "recon_handle") (param i32 i32) (result i64)
    ;; 1 MiB + 100 MiB + a little: 1,618 pages in all.
    (if (i32.eq (memory.grow (i32.const 1617)) (i32.const -1)) (then unreachable))
    ;; The prefix is 90 bytes, the suffix 6.
    (memory.copy (i32.const 0x100000) (i32.const 0x400) (i32.const 90))
    (memory.fill (i32.const 0x10005a) (i32.const 0x61) (i32.const 104857600))
    (memory.copy (i32.const 0x650005a) (i32.const 0x480) (i32.const 6))
    ;; (0x100000 << 32) | (90 + 104857600 + 6)
    i64.const 0x0010000006400060))
