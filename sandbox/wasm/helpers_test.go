package wasm_test

import "os"

func writeFile(p string) error { return os.WriteFile(p, []byte("x"), 0o644) }
