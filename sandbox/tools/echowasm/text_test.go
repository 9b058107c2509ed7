package echowasm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestText: testdata/echo.wasm is Module's output, and wat2wasm (Debian's
// wabt, installed by make deps) assembles testdata/echo.wat to the same
// bytes: the text is the module.
func TestText(t *testing.T) {
	committed, err := os.ReadFile(filepath.Join("testdata", "echo.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, Module()) {
		t.Fatalf("testdata/echo.wasm (%d bytes) is not Module()'s %d bytes", len(committed), len(Module()))
	}
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("wat2wasm missing under CI=true (make deps installs wabt): %v", err)
		}
		t.Skipf("SKIPPING the text's check: %v (apt-get install wabt, or run with CI=true to make this a failure)", err)
	}
	out := filepath.Join(t.TempDir(), "echo.wasm")
	if msg, err := exec.Command(wat2wasm, filepath.Join("testdata", "echo.wat"), "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v: %s", err, msg)
	}
	assembled, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(assembled, committed) {
		t.Fatalf("wat2wasm testdata/echo.wat gives %d bytes that differ from testdata/echo.wasm's %d", len(assembled), len(committed))
	}
}
