package wasm_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/sandboxtest"
	"github.com/writhq/writ/sandbox/wasm"
)

const reactorPackage = "github.com/writhq/writ/sandbox/wasm/testdata/goreactor"

// TestGoReactor runs a Go prepared tool (testdata/goreactor) from the
// image its _initialize left, and with NoInitImage: each run is a fresh
// instance that starts where the package init left it (its table built,
// the arguments and environment read) and not where another run left it;
// with the image the init ran once, outside every run (nothing of it on
// the run's stderr), without it in each run. Random bytes differ between
// runs either way.
func TestGoReactor(t *testing.T) {
	t.Parallel()
	mod := sandboxtest.BuildReactor(t, reactorPackage)
	m, err := sandbox.ParseManifest([]byte(`{"name":"goreactor","tier":"wasm","module":"` + mod + `","env":["WRIT_TEST_ENV"]}`))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^inits=1 runs=1 table=999 env=(\w+) args=goreactor env-now=(\w+) rand=([0-9a-f]{16}) params=(.*)$`)
	for _, noImage := range []bool{false, true} {
		cfg := wasm.DefaultConfig()
		cfg.CacheDir, cfg.NoInitImage = wasm.SharedCache(t), noImage
		d, err := wasm.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close(context.Background())
		run := func(params, env string) sandbox.Outcome {
			t.Helper()
			ws := t.TempDir()
			out, err := d.Run(context.Background(), sandbox.Invocation{Manifest: m, Params: jsontext.Value(params),
				Workspace: ws, Env: map[string]string{"WRIT_TEST_ENV": env}})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(params, "write") {
				if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || string(b) != params {
					t.Errorf("the workspace's out.txt: %q, %v", b, err)
				}
			}
			return out
		}
		seen := map[string]bool{}
		for i, env := range []string{"one", "one", "two", "one"} {
			params := `{"n":` + string(rune('0'+i)) + `}`
			out := run(params, env)
			g := line.FindStringSubmatch(string(out.Output))
			if out.Status != sandbox.StatusOK || g == nil || g[1] != env || g[2] != env || g[4] != params {
				t.Fatalf("NoInitImage %v, env %s: status %s output %q stderr %q", noImage, env, out.Status, out.Output, out.Stderr)
			}
			if seen[g[3]] {
				t.Errorf("NoInitImage %v: random bytes %s repeated", noImage, g[3])
			}
			seen[g[3]] = true
			if inits := strings.Count(string(out.Stderr), "initializing"); inits != map[bool]int{false: 0, true: 1}[noImage] {
				t.Errorf("NoInitImage %v: the init ran %d times in the run: %q", noImage, inits, out.Stderr)
			}
		}
		// A Go reactor's panic aborts (a trap) where a command exits 2.
		for params, want := range map[string]int{`{"exit":1}`: 3, `{"return":1}`: 4, `{"panic":1}`: -1, `{"write":1}`: 0} {
			out := run(params, "one")
			if out.ExitCode != want {
				t.Errorf("NoInitImage %v, %s: exit %d status %s (%s), want %d", noImage, params, out.ExitCode, out.Status, out.Reason, want)
			}
			if params == `{"panic":1}` && (!strings.Contains(string(out.Stderr), "asked to") || !strings.Contains(out.Reason, "unreachable") || out.Status != sandbox.StatusError) {
				t.Errorf("the panic: status %s reason %q stderr %q", out.Status, out.Reason, out.Stderr)
			}
		}
	}
}
