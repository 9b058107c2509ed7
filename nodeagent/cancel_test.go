package nodeagent

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/bwrap"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

// procGrace is the grace the tiers give a canceled tool between SIGTERM
// and SIGKILL (sandbox/internal/proc: 2 s); slack is what a loaded machine
// may add to it.
const (
	procGrace = 2 * time.Second
	slack     = 3 * time.Second
)

// tagged returns the pids of the processes whose command line holds tag:
// the tool (its argv carries it) and, in the bwrap tier, bwrap itself.
// Zombies, already dead, are left out.
func tagged(t *testing.T, tag string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmd, []byte(tag)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// TestCancelStopsRunningTool runs a tool that would run for 20 s in the
// process and bwrap tiers, cancels it once its process is seen in /proc,
// and checks that Handle returns within the grace period with every
// process of the run gone, and a signed result with status canceled. A tool
// that dies of SIGTERM ends at once; one that ignores it is killed when the
// grace period is over, not before.
func TestCancelStopsRunningTool(t *testing.T) {
	tool := sandboxtest.HostTool(t)
	for _, c := range []struct {
		tier, params string
		ignoresTerm  bool
	}{
		{"process", `{"op":"sleep","ms":20000}`, false},
		{"process", `{"op":"linger","ms":20000,"path":"left"}`, true},
		{"bwrap", `{"op":"sleep","ms":20000}`, false},
		{"bwrap", `{"op":"linger","ms":20000,"path":"left"}`, true},
	} {
		t.Run(fmt.Sprintf("%s ignores TERM %v", c.tier, c.ignoresTerm), func(t *testing.T) {
			if c.ignoresTerm {
				testtier.Slow(t, "waits out the grace period of a tool that ignores SIGTERM")
			}
			// One at a time: each stop is timed against the grace (run
			// side by side under load, a tool that ignores SIGTERM was once
			// seen stopped 3 ms after the cancel, cause not found).
			h := newHarness(t, 1)
			tiers := map[string]sandbox.Driver{"wasm": sharedWasm(t)}
			if c.tier == "bwrap" {
				d, err := bwrap.New(bwrap.DefaultConfig())
				if err != nil {
					t.Fatal(err)
				}
				sandboxtest.RequireAvailable(t, "bwrap", d.Available())
				tiers["bwrap"] = d
			} else {
				tiers["process"] = processDriver(t)
			}
			tag := fmt.Sprintf("writ-cancel-%d-%d", os.Getpid(), time.Now().UnixNano())
			tools := filepath.Join(h.dir, "tools")
			writeFiles(t, tools, map[string]string{"sleeper.json": `{"name":"sleeper","tier":"` + c.tier +
				`","command":{"path":"` + tool + `","args":["` + tag + `"]},"limits":{"timeout_ms":30000}}`})
			var err error
			if h.allow, err = LoadAllowlist(tools); err != nil {
				t.Fatal(err)
			}
			h.tiers = Probe(tiers)
			h.x = h.newExecutor(1)
			d := h.dispatch("sleeper", c.params)
			done := make(chan error, 1)
			go func() { done <- h.x.Handle(context.Background(), sign(t, d, serverKey), servers) }()
			// The tool itself runs: a process whose argv[0] is the tool
			// (not only bwrap, whose argv names it further on).
			toolPid := 0
			waitFor(t, "the tool to start", func() bool {
				select {
				case err := <-done:
					t.Fatalf("the run ended before the cancel: %v %+v", err, h.outbox()[d.ID])
				default:
				}
				for _, pid := range tagged(t, tag) {
					cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
					if bytes.HasPrefix(cmd, []byte(tool+"\x00")) {
						toolPid = pid
						return true
					}
				}
				return false
			})
			if c.ignoresTerm {
				// Past the point where it ignores signals: the kernel says
				// so, however long a loaded machine took the tool to get
				// there.
				waitFor(t, "the tool to ignore SIGTERM", func() bool { return ignores(toolPid, syscall.SIGTERM) })
			}
			start := time.Now()
			h.x.Cancel(d.ID)
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(procGrace + slack):
				t.Fatalf("Handle has not returned %s after the cancel", procGrace+slack)
			}
			took := time.Since(start)
			if left := tagged(t, tag); len(left) > 0 {
				t.Fatalf("processes of the canceled run are left: %v", left)
			}
			if c.ignoresTerm && took < procGrace-100*time.Millisecond {
				t.Errorf("a tool that ignores SIGTERM was killed after %s, before the grace of %s", took, procGrace)
			}
			if !c.ignoresTerm && took >= procGrace {
				t.Errorf("a tool that dies of SIGTERM took %s to stop, the whole grace", took)
			}
			r := h.outbox()[d.ID]
			if r == nil || r.Status != protocol.StatusCanceled || r.Sandbox != c.tier || r.Error == "" {
				t.Fatalf("result %+v, want status canceled from the %s tier", r, c.tier)
			}
			t.Logf("stopped in %s", took)
		})
	}
}

// TestCancelStopsWasmTool: a wasm module that would run for 20 s is
// stopped at once by a cancel (the tier closes the module when its context
// is done) and its result says canceled.
func TestCancelStopsWasmTool(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 1)
	module := sandboxtest.WasmTool(t)
	tools := filepath.Join(h.dir, "tools")
	writeFiles(t, tools, map[string]string{"spinner.json": `{"name":"spinner","tier":"wasm","module":"` + module + `","limits":{"timeout_ms":30000}}`})
	var err error
	if h.allow, err = LoadAllowlist(tools); err != nil {
		t.Fatal(err)
	}
	h.x = h.newExecutor(1)
	// A first run compiles the module (seconds on a loaded machine, and not
	// what is canceled here); the second one starts from the cache.
	warm := h.dispatch("spinner", `{"op":"echo"}`)
	if err := h.x.Handle(context.Background(), sign(t, warm, serverKey), servers); err != nil {
		t.Fatal(err)
	}
	d := h.dispatch("spinner", `{"op":"spin"}`)
	done := make(chan error, 1)
	go func() { done <- h.x.Handle(context.Background(), sign(t, d, serverKey), servers) }()
	waitFor(t, "the module to run", func() bool {
		h.x.mu.Lock()
		defer h.x.mu.Unlock()
		return h.x.running[d.ID] != nil
	})
	time.Sleep(300 * time.Millisecond) // into the spin
	h.x.Cancel(d.ID)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(procGrace + slack):
		t.Fatal("the module still runs after the cancel")
	}
	if r := h.outbox()[d.ID]; r == nil || r.Status != protocol.StatusCanceled || r.Sandbox != "wasm" {
		t.Fatalf("result %+v, want canceled from the wasm tier", r)
	}
}

// TestCancelBeforeStart: a dispatch canceled before its frame is handled
// never runs; its result says canceled. A cancel of a dispatch that has a
// result changes nothing.
func TestCancelBeforeStart(t *testing.T) {
	h := newHarness(t, 1)
	d := h.dispatch("witness", h.witnessParams(false))
	h.x.Cancel(d.ID)
	if err := h.x.Handle(context.Background(), sign(t, d, serverKey), servers); err != nil {
		t.Fatal(err)
	}
	if n := h.runs(); n != 0 {
		t.Fatalf("the witness ran %d times, want 0", n)
	}
	r := h.outbox()[d.ID]
	if r == nil || r.Status != protocol.StatusCanceled || r.Sandbox != "" {
		t.Fatalf("result %+v, want status canceled, no tier", r)
	}
	// Ran to its end, then canceled: the result stays ok.
	ok := h.dispatch("witness", h.witnessParams(false))
	if err := h.x.Handle(context.Background(), sign(t, ok, serverKey), servers); err != nil {
		t.Fatal(err)
	}
	h.x.Cancel(ok.ID)
	if r := h.outbox()[ok.ID]; r == nil || r.Status != protocol.StatusOK {
		t.Fatalf("result %+v, want ok", r)
	}
	if n := h.runs(); n != 1 {
		t.Fatalf("the witness ran %d times, want 1", n)
	}
}

// TestCancelWhileWaitingForSlot: a dispatch waiting for a slot behind a
// running tool is answered canceled as soon as it is canceled, without
// waiting for the slot, and never runs.
func TestCancelWhileWaitingForSlot(t *testing.T) {
	h := newHarness(t, 1)
	busy := h.dispatch("witness", h.witnessParams(true))
	busyDone := make(chan error, 1)
	go func() { busyDone <- h.x.Handle(context.Background(), sign(t, busy, serverKey), servers) }()
	waitFor(t, "the busy tool to start", func() bool { return h.runs() == 1 })
	queued := h.dispatch("witness", h.witnessParams(false))
	done := make(chan error, 1)
	go func() { done <- h.x.Handle(context.Background(), sign(t, queued, serverKey), servers) }()
	waitFor(t, "the second dispatch to wait for a slot", func() bool {
		h.x.mu.Lock()
		defer h.x.mu.Unlock()
		return h.x.waiting[queued.ID] != nil
	})
	h.x.Cancel(queued.ID)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the canceled dispatch still waits for the slot")
	}
	if r := h.outbox()[queued.ID]; r == nil || r.Status != protocol.StatusCanceled {
		t.Fatalf("result %+v, want canceled", r)
	}
	os.WriteFile(h.release, nil, 0o644)
	if err := <-busyDone; err != nil {
		t.Fatal(err)
	}
	if n := h.runs(); n != 1 {
		t.Fatalf("the witness ran %d times, want 1 (the busy one)", n)
	}
	if r := h.outbox()[busy.ID]; r == nil || r.Status != protocol.StatusOK {
		t.Fatalf("the busy one: %+v, want ok", r)
	}
}

// ignores reports whether process pid ignores sig (SigIgn in its status).
func ignores(pid int, sig syscall.Signal) bool {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for line := range strings.Lines(string(b)) {
		if mask, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
			return err == nil && m&(1<<(sig-1)) != 0
		}
	}
	return false
}
