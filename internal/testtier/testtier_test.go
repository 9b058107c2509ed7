package testtier

import (
	"flag"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how Slow ended the test, ending
// the goroutine on Skip and Fatalf as the real ones do.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Skip(args ...any) {
	r.skipped = fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// slow runs Slow on a goroutine of its own, as the testing package runs a
// test, and reports how it ended and whether the test went on.
func slow(why string) (r *recorder, wentOn bool) {
	r = &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Slow(r, why)
		wentOn = true
	}()
	<-done
	return r, wentOn
}

// TestSlow: under -short a slow test is skipped saying why, and under
// CI=true it fails instead; without -short it runs. The test runs in both
// tiers and checks the branch of the tier it is in.
func TestSlow(t *testing.T) {
	t.Setenv("CI", "")
	r, wentOn := slow("a cluster")
	switch {
	case testing.Short() && (wentOn || r.skipped != "not in -short: a cluster" || r.failed != ""):
		t.Fatalf("under -short: went on %v, skipped %q, failed %q; want skipped saying why", wentOn, r.skipped, r.failed)
	case !testing.Short() && (!wentOn || r.skipped != "" || r.failed != ""):
		t.Fatalf("without -short: went on %v, skipped %q, failed %q; want it to run", wentOn, r.skipped, r.failed)
	}
	t.Setenv("CI", "true")
	r, wentOn = slow("a cluster")
	switch {
	case testing.Short() && (wentOn || r.skipped != "" || r.failed == ""):
		t.Fatalf("under -short with CI=true: went on %v, skipped %q, failed %q; want a failure", wentOn, r.skipped, r.failed)
	case !testing.Short() && !wentOn:
		t.Fatalf("with CI=true: skipped %q, failed %q; want it to run", r.skipped, r.failed)
	}
}

// TestRounds: the short count under -short, the full one otherwise.
func TestRounds(t *testing.T) {
	t.Parallel()
	want := 300
	if testing.Short() {
		want = 20
	}
	if got := Rounds(300, 20); got != want {
		t.Fatalf("Rounds(300, 20) = %d, want %d (short %v)", got, want, testing.Short())
	}
}

// TestRoot: as root the test goes on; otherwise it is skipped saying what it
// needs root for, and under CI=true it fails.
func TestRoot(t *testing.T) {
	defer func(f func() int) { geteuid = f }(geteuid)
	root := func(why string) (r *recorder, wentOn bool) {
		r = &recorder{}
		done := make(chan struct{})
		go func() {
			defer close(done)
			Root(r, why)
			wentOn = true
		}()
		<-done
		return r, wentOn
	}
	t.Setenv("CI", "true")
	geteuid = func() int { return 0 }
	if r, wentOn := root("a tmpfs"); !wentOn || r.skipped != "" || r.failed != "" {
		t.Fatalf("as root: went on %v, skipped %q, failed %q; want it to run", wentOn, r.skipped, r.failed)
	}
	geteuid = func() int { return 1000 }
	if r, wentOn := root("a tmpfs"); wentOn || r.failed != "needs root (a tmpfs), and CI=true" {
		t.Fatalf("not root, CI=true: went on %v, skipped %q, failed %q; want a failure naming the need", wentOn, r.skipped, r.failed)
	}
	t.Setenv("CI", "")
	if r, wentOn := root("a tmpfs"); wentOn || !strings.Contains(r.skipped, "needs root (a tmpfs)") || r.failed != "" {
		t.Fatalf("not root: went on %v, skipped %q, failed %q; want skipped naming the need", wentOn, r.skipped, r.failed)
	}
}

// TestParallel: n when the command line did not set -test.parallel, the
// command line's value when it did, the default under -test.fuzz.
func TestParallel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		want int
	}{
		{"not set", nil, 8},
		{"set", []string{"-test.parallel=3"}, 3},
		{"set to the default", []string{"-test.parallel", "2"}, 2},
		{"fuzzing", []string{"-test.fuzz=FuzzX"}, 2},
		{"fuzz flag empty", []string{"-test.fuzz="}, 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			got := fs.Int("test.parallel", 2, "")
			fs.String("test.fuzz", "", "")
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			if err := parallel(fs, 8); err != nil {
				t.Fatal(err)
			}
			if *got != c.want {
				t.Fatalf("args %q: test.parallel %d, want %d", c.args, *got, c.want)
			}
		})
	}
	if err := parallel(flag.NewFlagSet("empty", flag.ContinueOnError), 8); err == nil {
		t.Fatal("a flag set without test.parallel: no error")
	}
}
