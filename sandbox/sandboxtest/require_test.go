package sandboxtest

import (
	"fmt"
	"testing"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/bwrap"
)

// recorder is a testing.TB that records how a helper first stopped the
// test (a real Fatal or Skip does not return; these do).
type recorder struct {
	testing.TB
	how string
}

func (r *recorder) stop(how string) {
	if r.how == "" {
		r.how = how
	}
}
func (r *recorder) Helper()                   {}
func (r *recorder) Fatalf(string, ...any)     { r.stop("fail") }
func (r *recorder) Fatal(...any)              { r.stop("fail") }
func (r *recorder) Skipf(string, ...any)      { r.stop("skip") }
func (r *recorder) Skip(...any)               { r.stop("skip") }
func (r *recorder) Logf(string, ...any)       {}
func (r *recorder) Errorf(f string, a ...any) { r.stop("error: " + fmt.Sprintf(f, a...)) }

// TestRequireAvailable: a tier that cannot run here — a missing bwrap
// binary, the real driver's own reason — fails the test under CI=true and
// is skipped otherwise; an available one goes on.
func TestRequireAvailable(t *testing.T) {
	cfg := bwrap.DefaultConfig()
	cfg.Binary = "/nonexistent/bwrap"
	d, err := bwrap.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	missing := d.Available()
	if missing == nil {
		t.Fatal("a driver without its binary is available")
	}
	for _, c := range []struct {
		ci, want string
		err      error
	}{{"true", "fail", missing}, {"", "skip", missing}, {"false", "skip", missing}, {"true", "", nil}} {
		t.Setenv("CI", c.ci)
		for name, stop := range map[string]func(testing.TB){
			"RequireAvailable": func(tb testing.TB) { RequireAvailable(tb, sandbox.TierBwrap, c.err) },
			"missingOnHost": func(tb testing.TB) {
				if c.err != nil {
					missingOnHost(tb, c.err.Error())
				}
			},
		} {
			r := &recorder{TB: t}
			stop(r)
			if r.how != c.want {
				t.Errorf("%s with CI=%q and %v: got %q, want %q", name, c.ci, c.err, r.how, c.want)
			}
		}
	}
}
