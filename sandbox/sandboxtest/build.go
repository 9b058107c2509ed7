// Package sandboxtest is the conformance suite every sandbox tier passes.
// A tier's test builds a Harness and calls Run; the suite runs the same test
// tool (./testtool, built here for the host or for wasip1) through it.
package sandboxtest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
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
	return build(t, pkg, goos, goarch, "")
}

// BuildReactor compiles the Go main package pkg as a WASI reactor
// (wasip1, -buildmode=c-shared: it exports _initialize and what the
// package exports with go:wasmexport), as BuildTool does a command.
func BuildReactor(t testing.TB, pkg string) string {
	t.Helper()
	return build(t, pkg, "wasip1", "wasm", "c-shared")
}

func build(t testing.TB, pkg, goos, goarch, mode string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	key := pkg + " " + goos + "/" + goarch
	name := filepath.Base(pkg)
	if mode != "" {
		key += " " + mode
		name += "-" + mode
	}
	if p, ok := built[key]; ok {
		return p
	}
	if p, ok := inheritedBuild(key); ok {
		built[key] = p
		return p
	}
	if buildDir == "" {
		d, err := sharedDir()
		if err != nil {
			t.Fatal(err)
		}
		buildDir = d
	}
	// Build beside the target and rename: test binaries of several
	// packages build the same tool at once, and a running copy stays valid.
	// The name carries a hash of the content: checkouts with different
	// sources (worktrees, CI) share this directory and must not run each
	// other's tool.
	tmp := filepath.Join(buildDir, fmt.Sprintf("%s-%s-%s.%d.tmp", name, goos, goarch, os.Getpid()))
	args := []string{"build", "-trimpath", "-o", tmp}
	if mode != "" {
		args = append(args, "-buildmode="+mode)
	}
	cmd := exec.Command(goTool(), append(args, pkg)...)
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s for %s/%s: %v\n%s", pkg, goos, goarch, err, b)
	}
	content, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	out := filepath.Join(buildDir, fmt.Sprintf("%s-%s-%s-%x", name, goos, goarch, sum[:8]))
	if goos == "wasip1" {
		out += ".wasm"
	}
	// An identical build keeps the existing file: replacing it would pull
	// it from under another test process that is running it.
	if same(tmp, out) {
		os.Remove(tmp)
	} else if err := os.Rename(tmp, out); err != nil {
		t.Fatal(err)
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

// sharedDir is one directory per user for the built tools, reused across
// runs so that they do not pile up in the temporary directory. It must be
// a real directory owned by us, readable (tools may run as another uid).
func sharedDir() (string, error) {
	d := filepath.Join(os.TempDir(), fmt.Sprintf("writ-sandboxtest-%d", os.Getuid()))
	if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
		return "", err
	}
	st, err := os.Lstat(d)
	if err != nil {
		return "", err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !st.IsDir() || !ok || int(sys.Uid) != os.Getuid() || st.Mode().Perm()&0o022 != 0 {
		return "", fmt.Errorf("%s is not a directory of ours that only we can write", d)
	}
	return d, os.Chmod(d, 0o755)
}

// builtEnv hands the tools built so far to a test process this one starts
// (the terminal rerun), as "key=path" lines, so that it does not build
// them again.
const builtEnv = "WRIT_SANDBOXTEST_BUILT"

func builtList() string {
	buildMu.Lock()
	defer buildMu.Unlock()
	var b strings.Builder
	for k, p := range built {
		fmt.Fprintf(&b, "%s=%s\n", k, p)
	}
	return b.String()
}

func inheritedBuild(key string) (string, bool) {
	for _, line := range strings.Split(os.Getenv(builtEnv), "\n") {
		if k, p, ok := strings.Cut(line, "="); ok && k == key {
			if _, err := os.Stat(p); err == nil {
				return p, true
			}
		}
	}
	return "", false
}

func same(a, b string) bool {
	x, err := os.ReadFile(a)
	if err != nil {
		return false
	}
	y, err := os.ReadFile(b)
	return err == nil && bytes.Equal(x, y)
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	// Not on PATH: try where Go is installed on Writ's machines.
	return "/usr/local/go/bin/go"
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

// missingOnHost stops a case whose host program is absent: a failure under
// CI=true, where the machine is set up by make deps; a skip otherwise.
func missingOnHost(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}
