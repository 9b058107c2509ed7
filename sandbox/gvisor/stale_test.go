package gvisor_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/internal/testtier"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/gvisor"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

// TestStaleContainer: a gVisor container a crashed agent left behind (its
// id names a pid that no longer runs) is deleted by New, while a live
// agent's is left alone. runsc keeps no directory per container: New asks
// it for the list.
func TestStaleContainer(t *testing.T) {
	testtier.Slow(t, "runsc sandboxes")
	cfg := config(t)
	d, err := gvisor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, sandbox.TierGvisor, d.Available())
	m := sandbox.Manifest{Name: "t", Tier: sandbox.TierGvisor, Command: &sandbox.Command{Path: sandboxtest.HostTool(t)}}
	ws := t.TempDir()
	os.Chmod(ws, 0o777)
	inv := sandbox.Invocation{Manifest: m, Workspace: ws, Params: jsontext.Value(`{"op":"sleep","ms":60000}`)}
	runsc := func(args ...string) *exec.Cmd {
		return exec.Command(d.Runtime(), slices.Concat(d.RuntimeArgs(), args)...)
	}
	stale, live := fmt.Sprintf("writ-999999999-%d", os.Getpid()), fmt.Sprintf("writ-%d-999", os.Getpid())
	for _, id := range []string{stale, live} {
		bundle := filepath.Join(t.TempDir(), id)
		if err := os.MkdirAll(bundle, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := d.WriteBundle(bundle, id, inv); err != nil {
			t.Fatal(err)
		}
		errs, err := os.CreateTemp(t.TempDir(), "stderr")
		if err != nil {
			t.Fatal(err)
		}
		create := runsc("create", "--bundle", bundle, id)
		create.Stderr = errs
		if err := create.Run(); err != nil {
			b, _ := os.ReadFile(errs.Name())
			t.Fatalf("runsc create %s: %v\n%s", id, err, b)
		}
		errs.Close()
		t.Cleanup(func() { runsc("delete", "--force", id).Run() })
		if err := runsc("state", id).Run(); err != nil {
			t.Fatalf("container %s not there after create: %v", id, err)
		}
	}
	if _, err := gvisor.New(cfg); err != nil {
		t.Fatal(err)
	}
	if err := runsc("state", stale).Run(); err == nil {
		t.Errorf("the stale container %s survived New", stale)
	}
	if err := runsc("state", live).Run(); err != nil {
		t.Errorf("a live agent's container was deleted: %v", err)
	}
}

// TestKilledRunLeavesNothing: a run stopped at its wall-clock limit leaves
// no container in runsc's state and no cgroup.
func TestKilledRunLeavesNothing(t *testing.T) {
	testtier.Slow(t, "a runsc sandbox")
	d, err := gvisor.New(config(t))
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, sandbox.TierGvisor, d.Available())
	m := sandbox.Manifest{Name: "t", Tier: sandbox.TierGvisor, Command: &sandbox.Command{Path: sandboxtest.HostTool(t)},
		Limits: sandbox.Limits{TimeoutMS: 500}}
	ws := t.TempDir()
	os.Chmod(ws, 0o777)
	// Killed while the sandbox may still be starting: runsc left the
	// cgroups of such runs behind.
	for range 3 {
		o, err := d.Run(t.Context(), sandbox.Invocation{Manifest: m, Workspace: ws, Params: jsontext.Value(`{"op":"spin"}`)})
		if err != nil || o.Status != sandbox.StatusTimeout {
			t.Fatalf("run: %v %s %s", err, o.Status, o.Reason)
		}
	}
	out, err := exec.Command(d.Runtime(), slices.Concat(d.RuntimeArgs(), []string{"list", "--quiet"})...).Output()
	if err != nil || len(out) != 0 {
		t.Errorf("runsc list after a killed run: %q %v", out, err)
	}
	entries, _ := os.ReadDir(d.StateDir())
	for _, e := range entries {
		t.Errorf("left in runsc's state: %s", e.Name())
	}
	// The container's cgroup (v1: one directory per hierarchy; v2: one).
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/writ-gvisor/writ-*")
	more, _ := filepath.Glob("/sys/fs/cgroup/writ-gvisor/writ-*")
	for _, dir := range append(dirs, more...) {
		if strings.HasPrefix(filepath.Base(dir), fmt.Sprintf("writ-%d-", os.Getpid())) {
			t.Errorf("cgroup left: %s", dir)
		}
	}
}
