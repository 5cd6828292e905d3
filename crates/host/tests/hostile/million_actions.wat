;; recon_handle returns a million actions (requeue every millisecond), 45 MB of valid JSON.
(module
  (memory (export "memory") 1)
  (data (i32.const 0x100) "{\"name\":\"hostile\",\"abiVersion\":1,\"watches\":[{\"kind\":\"Pod\"}]}")
  (func (export "recon_abi_version") (result i32) i32.const 1)
  (func (export "recon_alloc") (param i32) (result i32) i32.const 0x1000)
  ;; The manifest: (0x100 << 32) | 60.
  (func (export "recon_init") (param i32 i32) (result i64) i64.const 0x1000000003c)
  (data (i32.const 0x400) "{\"actions\":[")
  (data (i32.const 0x440) "{\"type\":\"requeueAfter\",\"key\":\"\",\"afterMs\":1},")
  (data (i32.const 0x480) "{\"type\":\"requeueAfter\",\"key\":\"\",\"afterMs\":1}]}")
  (func (export "recon_handle") (param i32 i32) (result i64) (local $i i32) (local $at i32)
    ;; Room for 45 bytes per action from 1 MiB on.
    (drop (memory.grow (i32.add (i32.const 17) (i32.div_u (i32.mul (i32.const 1000000) (i32.const 45)) (i32.const 0x10000)))))
    (memory.copy (i32.const 0x100000) (i32.const 0x400) (i32.const 12))
    (local.set $at (i32.const 0x10000c))
    ;; All but the last action, each followed by a comma.
    (loop $next
      (memory.copy (local.get $at) (i32.const 0x440) (i32.const 45))
      (local.set $at (i32.add (local.get $at) (i32.const 45)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $next (i32.lt_u (local.get $i) (i32.const 999999))))
    (memory.copy (local.get $at) (i32.const 0x480) (i32.const 46))
    (local.set $at (i32.add (local.get $at) (i32.const 46)))
    (i64.or (i64.const 0x0010000000000000) (i64.extend_i32_u (i32.sub (local.get $at) (i32.const 0x100000))))))
