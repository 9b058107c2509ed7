package wasm

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// testCache is one wazero compilation cache for the tests that do not test
// the cache itself, kept across runs as sandboxtest keeps the tools it
// builds: a Go guest compiled once (tens of seconds on a loaded machine)
// serves every such test and every later run. wazero writes each entry to
// a temporary file and renames it into place, keyed by the module's hash
// and wazero's version, so test processes running at once share it safely.
func testCache(t testing.TB) string {
	t.Helper()
	d := filepath.Join(os.TempDir(), fmt.Sprintf("writ-wasm-testcache-%d", os.Getuid()))
	if err := os.Mkdir(d, 0o700); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	st, err := os.Lstat(d)
	if err != nil {
		t.Fatal(err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !st.IsDir() || !ok || int(sys.Uid) != os.Getuid() || st.Mode().Perm() != 0o700 {
		t.Fatalf("%s is not a directory of ours that only we may use", d)
	}
	return d
}

// SharedCache is testCache for the package's external tests.
func SharedCache(t testing.TB) string { return testCache(t) }
