;; The echo tool of package echowasm in WebAssembly text: _start copies
;; standard input to standard output in chunks of 32 KiB, retrying short
;; writes; a WASI error exits 1. No language runtime, no data segments: the
;; wasm tier's floor in benchmarks.
;;
;; echo.wasm beside it is its binary: `wat2wasm echo.wat -o echo.wasm`
;; (Debian's wabt). echowasm.Module assembles the same bytes instruction by
;; instruction, in this order; TestText checks that echo.wasm is Module's
;; output and, where wat2wasm is installed, that it is this text's.
;;
;; Memory: readIOV at 0, nread at 8, writeIOV at 16, nwritten at 24, the
;; copy buffer at 1024.
(module
  (type (;0;) (func (param i32 i32 i32 i32) (result i32)))
  (type (;1;) (func (param i32)))
  (type (;2;) (func))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (type 0)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (type 0)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (type 1)))
  (memory (;0;) 1)
  (export "memory" (memory 0))
  (export "_start" (func $start))
  (func $start (type 2) (local $n i32) (local $p i32) (local $w i32)
    block $done
      loop $read
        i32.const 0        ;; readIOV = {1024, 32768}
        i32.const 1024
        i32.store
        i32.const 4
        i32.const 32768
        i32.store
        i32.const 0        ;; fd_read(stdin, readIOV, 1, &nread)
        i32.const 0
        i32.const 1
        i32.const 8
        call $fd_read
        if
          i32.const 1
          call $proc_exit
        end
        i32.const 8
        i32.load
        local.set $n
        local.get $n
        i32.eqz
        br_if $done        ;; end of file
        i32.const 1024
        local.set $p
        loop $write
          i32.const 16     ;; writeIOV = {p, n}
          local.get $p
          i32.store
          i32.const 20
          local.get $n
          i32.store
          i32.const 1      ;; fd_write(stdout, writeIOV, 1, &nwritten)
          i32.const 16
          i32.const 1
          i32.const 24
          call $fd_write
          if
            i32.const 1
            call $proc_exit
          end
          i32.const 24
          i32.load
          local.tee $w
          i32.eqz          ;; a write of nothing cannot progress
          if
            i32.const 1
            call $proc_exit
          end
          local.get $p
          local.get $w
          i32.add
          local.set $p
          local.get $n
          local.get $w
          i32.sub
          local.tee $n
          br_if $write     ;; until all n bytes are written
        end
        br $read
      end
    end))
