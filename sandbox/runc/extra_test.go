package runc_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/internal/eventually"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/internal/benchstat"
	"github.com/writhq/writ/sandbox/runc"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

// TestContainment reads the tool's own /proc/self/status: no capability,
// no new privileges, a seccomp filter, the configured uid.
func TestContainment(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	if v := d.Version(); !strings.Contains(v, "version") {
		t.Errorf("runtime version %q, want the first line of its --version", v)
	}
	m := sandbox.Manifest{Name: "t", Tier: sandbox.TierRunc, Command: &sandbox.Command{Path: sandboxtest.HostTool(t)}}
	ws := t.TempDir()
	os.Chmod(ws, 0o777)
	out, err := d.Run(context.Background(), sandbox.Invocation{Manifest: m, Workspace: ws,
		Params: jsontext.Value(`{"op":"read","path":"/proc/self/status"}`)})
	if err != nil || out.Status != sandbox.StatusOK {
		t.Fatalf("%v %s %q", err, out.Status, out.Stderr)
	}
	status := string(out.Output)
	for _, want := range []string{"CapEff:\t0000000000000000", "CapBnd:\t0000000000000000",
		"NoNewPrivs:\t1", "Seccomp:\t2", "Uid:\t65534\t65534\t65534\t65534"} {
		if !strings.Contains(status, want) {
			t.Errorf("status lacks %q:\n%s", want, status)
		}
	}
}

// TestStaleCleanup: bundles of an agent that is gone are removed by New.
func TestStaleCleanup(t *testing.T) {
	t.Parallel()
	cfg := config(t)
	stale := filepath.Join(cfg.StateDir, "bundles", "writ-999999999-1")
	live := filepath.Join(cfg.StateDir, "bundles", fmt.Sprintf("writ-%d-77", os.Getpid()))
	os.MkdirAll(stale, 0o700)
	os.MkdirAll(live, 0o700)
	if _, err := runc.New(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("stale bundle %s survived", stale)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live agent's bundle was removed")
	}
}

// BenchmarkTrue runs busybox true from the root filesystem through the
// runc tier next to a raw "runc run" of the same bundle. Target: ratio ≤ 1.3.
func BenchmarkTrue(b *testing.B) {
	d := newDriver(b)
	m := sandbox.Manifest{Name: "true", Tier: sandbox.TierRunc, Command: &sandbox.Command{Path: sandboxtest.HostTool(b)}}
	ws := b.TempDir()
	os.Chmod(ws, 0o777)
	params := `{"op":"exit","code":0}`
	inv := sandbox.Invocation{Manifest: m, Workspace: ws, Params: jsontext.Value(params)}
	bundle := b.TempDir()
	if err := d.WriteBundle(bundle, "writ-bench-raw", inv); err != nil {
		b.Fatal(err)
	}
	n := 0
	benchstat.Compare(b,
		func() error {
			n++
			cmd := exec.Command(d.Runtime(), "--root", d.StateDir(), "run", "--bundle", bundle, fmt.Sprintf("writ-raw-%d", n))
			cmd.Stdin = strings.NewReader(params)
			return cmd.Run()
		},
		func() error {
			out, err := d.Run(context.Background(), inv)
			if err == nil && out.Status != sandbox.StatusOK {
				err = fmt.Errorf("status %s: %s", out.Status, out.Stderr)
			}
			return err
		})
}

// TestCgroupLimits reads, from the host, the cgroup the runtime made for
// a running container: memory (with swap, on a v1 host that accounts for
// it), pids and CPU bandwidth as configured, on cgroup v1 or v2.
func TestCgroupLimits(t *testing.T) { cgroupLimits(t, "runc") }

// cgroupLimits runs one tool with the OCI runtime rt and reads its
// container's cgroup limits while it runs.
func cgroupLimits(t *testing.T, rt string) {
	cfg := config(t)
	cfg.CPUs = 0.5
	cfg.Runtime = rt
	d, err := runc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, rt, d.Available())
	m := sandbox.Manifest{Name: "t", Tier: sandbox.TierRunc, Command: &sandbox.Command{Path: sandboxtest.HostTool(t)},
		Limits: sandbox.Limits{MemoryBytes: 96 << 20, Pids: 17}}
	ws := t.TempDir()
	os.Chmod(ws, 0o777)
	pattern := fmt.Sprintf("/sys/fs/cgroup/pids/writ-runc/writ-%d-*", os.Getpid())
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		pattern = fmt.Sprintf("/sys/fs/cgroup/writ-runc/writ-%d-*", os.Getpid())
	}
	before := map[string]bool{} // groups of earlier tests, maybe still being removed
	old, _ := filepath.Glob(pattern)
	for _, o := range old {
		before[o] = true
	}
	done := make(chan sandbox.Outcome)
	go func() {
		out, _ := d.Run(context.Background(), sandbox.Invocation{Manifest: m, Workspace: ws,
			Params: jsontext.Value(`{"op":"waitfor","path":"limits-read","ms":30000}`)})
		done <- out
	}()
	var want map[string]string
	var dir string
	v2 := false
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		v2 = true
		want = map[string]string{"memory.max": "100663296", "pids.max": "17", "cpu.max": "50000 100000"}
	} else {
		want = map[string]string{"memory/%s/memory.limit_in_bytes": "100663296", "pids/%s/pids.max": "17",
			"cpu/%s/cpu.cfs_quota_us": "50000", "cpu/%s/cpu.cfs_period_us": "100000"}
		// Memory and swap together, where the kernel accounts for swap.
		if _, err := os.Stat("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes"); err == nil {
			want["memory/%s/memory.memsw.limit_in_bytes"] = "100663296"
		}
	}
	eventually.True(t, "a cgroup "+pattern+" to appear", func() bool {
		ms, _ := filepath.Glob(pattern)
		for _, m := range ms {
			if !before[m] {
				dir = filepath.Base(m)
			}
		}
		return dir != ""
	})
	for file, v := range want {
		path := filepath.Join("/sys/fs/cgroup/writ-runc", dir, file)
		if !v2 {
			path = filepath.Join("/sys/fs/cgroup", fmt.Sprintf(file, "writ-runc/"+dir))
		}
		// The runtime makes the group before it writes the limits.
		eventually.NoError(t, fmt.Sprintf("%s to be %q", path, v), func() error {
			b, err := os.ReadFile(path)
			if err == nil && strings.TrimSpace(string(b)) != v {
				return fmt.Errorf("got %q", b)
			}
			return err
		})
	}
	// The tool runs until the limits are read, then ends by itself.
	if err := os.WriteFile(filepath.Join(ws, "limits-read"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := <-done; out.Status != sandbox.StatusOK {
		t.Errorf("run: %s %s", out.Status, out.Stderr)
	}
}

// TestStaleContainer: a container a crashed agent left behind (its id
// names a pid that no longer runs) is deleted by New, with its bundle,
// while a live agent's container is left alone.
func TestStaleContainer(t *testing.T) { staleContainer(t, "runc") }

// staleContainer is TestStaleContainer with the OCI runtime rt.
func staleContainer(t *testing.T, rt string) {
	cfg := config(t)
	cfg.Runtime = rt
	d, err := runc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, rt, d.Available())
	// Commands by hand, as the tier runs the runtime (StartRuntime).
	runtime := func(cmd *exec.Cmd) error {
		if err := d.StartRuntime(cmd); err != nil {
			return err
		}
		return cmd.Wait()
	}
	m := sandbox.Manifest{Name: "t", Tier: sandbox.TierRunc, Command: &sandbox.Command{Path: sandboxtest.HostTool(t)}}
	ws := t.TempDir()
	os.Chmod(ws, 0o777)
	inv := sandbox.Invocation{Manifest: m, Workspace: ws, Params: jsontext.Value(`{"op":"sleep","ms":60000}`)}
	state := func(id string) error {
		return runtime(exec.Command(d.Runtime(), "--root", d.StateDir(), "state", id))
	}
	stale, live := fmt.Sprintf("writ-999999999-%d", os.Getpid()), fmt.Sprintf("writ-%d-999", os.Getpid())
	for _, id := range []string{stale, live} {
		bundle := filepath.Join(cfg.StateDir, "bundles", id)
		if err := os.MkdirAll(bundle, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := d.WriteBundle(bundle, id, inv); err != nil {
			t.Fatal(err)
		}
		// "create" leaves the container made, its process waiting to start.
		// That process gets create's stdio: a file, not a pipe that it
		// would hold open.
		errs, err := os.CreateTemp(t.TempDir(), "stderr")
		if err != nil {
			t.Fatal(err)
		}
		create := exec.Command(d.Runtime(), "--root", d.StateDir(), "create", "--bundle", bundle, id)
		create.Stderr = errs
		if err := runtime(create); err != nil {
			b, _ := os.ReadFile(errs.Name())
			t.Fatalf("%s create %s: %v\n%s", rt, id, err, b)
		}
		errs.Close()
		t.Cleanup(func() { runtime(exec.Command(d.Runtime(), "--root", d.StateDir(), "delete", "--force", id)) })
		if err := state(id); err != nil {
			t.Fatalf("container %s not there after create: %v", id, err)
		}
	}
	if _, err := runc.New(cfg); err != nil {
		t.Fatal(err)
	}
	if err := state(stale); err == nil {
		t.Errorf("the stale container %s survived New", stale)
	}
	if _, err := os.Stat(filepath.Join(cfg.StateDir, "bundles", stale)); err == nil {
		t.Errorf("the stale bundle survived New")
	}
	if err := state(live); err != nil {
		t.Errorf("a live agent's container was deleted: %v", err)
	}
}
