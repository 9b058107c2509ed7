// Package sandboxtest is the conformance suite every sandbox tier passes.
// A tier's test builds a Harness and calls Run; the suite runs the same test
// tool (./testtool, built here for the host or for wasip1) through it.
package sandboxtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	buildMu  sync.Mutex
	built    = map[string]string{}
	buildDir string
)

// BuildTool compiles the Go main package pkg (an import path in this
// module) for goos/goarch with the go toolchain, once per test process, and
// returns the path of the result. Binaries are static (CGO_ENABLED=0) so
// that they run in an empty sandbox root.
func BuildTool(t testing.TB, pkg, goos, goarch string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	key := pkg + " " + goos + "/" + goarch
	if p, ok := built[key]; ok {
		return p
	}
	if buildDir == "" {
		d, err := os.MkdirTemp("", "writ-sandboxtest-")
		if err != nil {
			t.Fatal(err)
		}
		// Readable and traversable by anyone: the tool may run as another user.
		os.Chmod(d, 0o755)
		buildDir = d
	}
	out := filepath.Join(buildDir, fmt.Sprintf("%s-%s-%s", filepath.Base(pkg), goos, goarch))
	if goos == "wasip1" {
		out += ".wasm"
	}
	cmd := exec.Command(goTool(), "build", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s for %s/%s: %v\n%s", pkg, goos, goarch, err, b)
	}
	built[key] = out
	return out
}

// TestToolPackage is the import path of the suite's test tool.
const TestToolPackage = "github.com/writhq/writ/sandbox/sandboxtest/testtool"

// HostTool builds the test tool for this host.
func HostTool(t testing.TB) string {
	return BuildTool(t, TestToolPackage, runtime.GOOS, runtime.GOARCH)
}

// WasmTool builds the test tool as a wasip1 module.
func WasmTool(t testing.TB) string {
	return BuildTool(t, TestToolPackage, "wasip1", "wasm")
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// RequireAvailable stops the test when the tier cannot run here: it fails
// under CI=true (a missing tier binary is a broken CI machine, never a
// pass), and skips with the reason otherwise.
func RequireAvailable(t testing.TB, name string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s tier unavailable under CI=true: %v", name, err)
	}
	t.Skipf("SKIPPING %s tier tests: %v (install it, or run with CI=true to make this a failure)", name, err)
}
