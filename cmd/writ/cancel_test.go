package main_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/internal/eventually"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/internal/testtier"
)

// procsWith returns the pids of the live processes whose command line holds
// tag.
func procsWith(t *testing.T, tag string) []int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
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

// TestCancelRunningUnderBwrap: a real server and agent run two tools in the
// bwrap tier that would wait 20 s; writ intent cancel stops one and writ run
// cancel the other's run. Each ends canceled with the node's signed result
// (status canceled) and a receipt, within the grace period, and no process
// of either is left on the host.
// sleeperCluster starts a server and an agent whose allowlist holds
// "sleeper", the witness in the bwrap tier with tag in its argv, and returns
// a function that submits a sleeper intent in a run and returns its id once
// dispatched: the witness then waits 20 s for a file that never comes.
func sleeperCluster(t *testing.T) (*cluster, *agent, string, func(runID string) string) {
	c := startServer(t)
	tag := fmt.Sprintf("writ-cancel-e2e-%d", time.Now().UnixNano())
	// bwrap runs as an unprivileged user, who cannot reach the test's
	// private build directory: the tool is copied where it can.
	bin := filepath.Join(witnessDir(t), "witness")
	placeExecutable(t, witnessBin, bin)
	manifest := `{"name":"sleeper","tier":"bwrap","command":{"path":"` + bin + `","args":["` + tag + `"]},"limits":{"timeout_ms":30000}}`
	c.tool(t, "sleeper", manifest)
	a := &agent{}
	c.startAgent(t, a, map[string]string{"sleeper": manifest})
	key := "orch=" + filepath.Join(c.dir, "orch.key")
	start := func(runID string) string {
		t.Helper()
		intent, code := run(t, "", "intent", "sign", "--key", key, "--tenant", "acme", "--principal", "bot", "--run", runID,
			"--tool", "sleeper", "--params", `{"file":"runs","wait_for":"never"}`)
		if code != 0 {
			t.Fatal("intent sign")
		}
		out, code := run(t, intent, "intent", "submit", "--server", c.server, "--ca", c.ca)
		var r struct {
			IntentID string `json:"intent_id"`
			State    string
		}
		if code != 0 || jsonx.UnmarshalLenient([]byte(out), &r) != nil || r.State != "dispatched" {
			t.Fatalf("submit: %q exit %d", out, code)
		}
		return r.IntentID
	}
	return c, a, tag, start
}

func TestCancelRunningUnderBwrap(t *testing.T) {
	c, a, tag, start := sleeperCluster(t)
	key := "orch=" + filepath.Join(c.dir, "orch.key")
	first, second := start("run-1"), start("run-2")
	a.waitFor(t, "both tools to start", func() bool { return len(procsWith(t, tag)) >= 2 })
	began := time.Now()
	out, code := run(t, "", "intent", "cancel", first, "--server", c.server, "--ca", c.ca, "--tenant", "acme", "--key", key, "--wait", "20s")
	var got struct {
		State  string
		Error  struct{ Code string }
		Result jsontext.Value
	}
	if code != 0 || jsonx.UnmarshalLenient([]byte(out), &got) != nil || got.State != "canceled" || got.Error.Code != "canceled" ||
		!strings.Contains(string(got.Result), `"status":"canceled"`) || !strings.Contains(string(got.Result), `"sandbox":"bwrap"`) {
		log, _ := os.ReadFile(a.log.Name())
		t.Fatalf("writ intent cancel: %q exit %d; agent log:\n%s", out, code, log)
	}
	took := time.Since(began)
	out, code = run(t, "", "run", "cancel", "run-2", "--server", c.server, "--ca", c.ca, "--tenant", "acme", "--key", key, "--wait", "20s")
	var rc struct {
		Intents []struct {
			IntentID string `json:"intent_id"`
			State    string
		}
	}
	if code != 0 || jsonx.UnmarshalLenient([]byte(out), &rc) != nil || len(rc.Intents) != 1 || rc.Intents[0].IntentID != second || rc.Intents[0].State != "canceled" {
		t.Fatalf("writ run cancel: %q exit %d", out, code)
	}
	if left := procsWith(t, tag); len(left) > 0 {
		t.Fatalf("processes of the canceled runs are left: %v", left)
	}
	// The witness dies of SIGTERM: far within the 2 s grace, plus the
	// round trips of a loaded machine.
	if took > 2*time.Second+3*time.Second {
		t.Fatalf("the cancel took %s", took)
	}
	// The receipt records the cancel and verifies with the node's result.
	out, code = run(t, "", "receipt", "get", "--intent", writeIntentRef(t, c.dir, first), "--server", c.server, "--ca", c.ca,
		"--tenant", "acme", "--key", key)
	if code != 0 || !strings.Contains(out, `"outcome":"canceled"`) {
		t.Fatalf("receipt: %q exit %d", out, code)
	}
	// Cancelling again changes nothing and says so: it had ended canceled.
	if out, code := run(t, "", "intent", "cancel", first, "--server", c.server, "--ca", c.ca, "--tenant", "acme", "--key", key); code != 0 || !strings.Contains(out, `"state":"canceled"`) {
		t.Fatalf("second cancel: %q exit %d", out, code)
	}
}

// writeIntentRef writes a file naming an intent the way a signed intent
// does, for --intent.
func writeIntentRef(t *testing.T, dir, id string) string {
	return writeFile(t, dir, id+".json", `{"id":"`+id+`","tenant":"acme"}`)
}

// TestLockStopsRunningUnderBwrap: writ lock create --tool stops the tool a
// real agent runs in bwrap (canceled, no process left) and refuses the next
// submission (rejected, locked; exit 1); writ lock list shows the lock; once
// writ lock delete removes it, the same tool is admitted and dispatched again.
func TestLockStopsRunningUnderBwrap(t *testing.T) {
	t.Parallel()
	testtier.Slow(t, "writ dev and an agent in processes of their own, running a tool under bwrap until a lock stops it")
	c, _, tag, start := sleeperCluster(t)
	key := "orch=" + filepath.Join(c.dir, "orch.key")
	id := start("run-1")
	eventually.True(t, "the tool to start", func() bool { return len(procsWith(t, tag)) > 0 })
	var lock struct {
		Lock struct{ ID, Tool, Reason string }
	}
	if err := jsonx.UnmarshalLenient([]byte(c.admin(t, "lock", "create", "--tool", "sleeper", "--reason", "runaway")), &lock); err != nil ||
		lock.Lock.ID == "" || lock.Lock.Tool != "sleeper" {
		t.Fatalf("lock create: %+v %v", lock, err)
	}
	out, code := run(t, "", "intent", "get", id, "--server", c.server, "--ca", c.ca, "--tenant", "acme", "--key", key, "--wait", "20s")
	if code != exitFor("canceled", true) || !strings.Contains(out, `"state":"canceled"`) || !strings.Contains(out, `"status":"canceled"`) {
		t.Fatalf("the running intent under the lock: %q exit %d", out, code)
	}
	if left := procsWith(t, tag); len(left) > 0 {
		t.Fatalf("processes of the locked tool are left: %v", left)
	}
	intent, _ := run(t, "", "intent", "sign", "--key", key, "--tenant", "acme", "--principal", "bot", "--run", "run-2",
		"--tool", "sleeper", "--params", `{"file":"runs","wait_for":"never"}`)
	out, code = run(t, intent, "intent", "submit", "--server", c.server, "--ca", c.ca)
	if code != 1 || !strings.Contains(out, `"state":"rejected"`) || !strings.Contains(out, `"code":"locked"`) {
		t.Fatalf("a submission under the lock: %q exit %d", out, code)
	}
	if out := c.admin(t, "lock", "list"); !strings.Contains(out, lock.Lock.ID) || !strings.Contains(out, "runaway") {
		t.Fatalf("lock list: %q", out)
	}
	c.admin(t, "lock", "delete", lock.Lock.ID)
	if out := c.admin(t, "lock", "list"); strings.Contains(out, lock.Lock.ID) {
		t.Fatalf("lock list after delete: %q", out)
	}
	again := start("run-3") // admitted and dispatched again
	// Stopped before the agent is, so that its workspace is released.
	if out, code := run(t, "", "intent", "cancel", again, "--server", c.server, "--ca", c.ca, "--tenant", "acme", "--key", key, "--wait", "20s"); code != 0 {
		t.Fatalf("cancel: %q exit %d", out, code)
	}
}
