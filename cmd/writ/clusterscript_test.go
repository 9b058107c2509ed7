package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/writhq/writ/internal/freeport"
)

// TestClusterScript runs `make cluster`'s script, deploy/cluster.sh, as a
// developer would: three real servers and two real agents come up, the
// intents its printed instructions describe run on the agents (any one, and
// one named), a second `up` changes nothing, and `down` stops every process.
func TestClusterScript(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short: make cluster's three servers and two agents")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to run deploy/cluster.sh")
	}
	base, err := freeport.Block(23) // s1..s3 at base+10*i+{0,1,2}
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), ".cluster")
	script := func(verb string) string {
		t.Helper()
		cmd := exec.Command(bash, "../../deploy/cluster.sh", verb)
		cmd.Env = append(os.Environ(), "WRIT="+writBin, "WRIT_CLUSTER_DIR="+dir, "WRIT_CLUSTER_PORT="+strconv.Itoa(base))
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
			case <-time.After(3 * time.Minute):
				cmd.Process.Kill()
			}
		}()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cluster.sh %s: %v\n%s", verb, err, out)
		}
		return string(out)
	}
	pids := func() map[string]int {
		m := map[string]int{}
		for _, n := range []string{"s1", "s2", "s3", "a1", "a2"} {
			if b, err := os.ReadFile(filepath.Join(dir, n+".pid")); err == nil {
				m[n], _ = strconv.Atoi(strings.TrimSpace(string(b)))
			}
		}
		return m
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range []string{"s1", "s2", "s3", "a1", "a2"} {
				b, _ := os.ReadFile(filepath.Join(dir, n+".log"))
				t.Logf("%s.log (last 2 KiB): %s", n, b[max(0, len(b)-2048):])
			}
		}
		for _, pid := range pids() { // whatever down did not stop
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	out := script("up")
	if !strings.Contains(out, "Writ cluster: 3 servers") || strings.Contains(out, "only") {
		t.Fatalf("cluster.sh up said:\n%s", out)
	}
	started := pids()
	if len(started) != 5 {
		t.Fatalf("pid files: %v, want 3 servers and 2 agents", started)
	}
	for n, pid := range started {
		if syscall.Kill(pid, 0) != nil {
			t.Fatalf("%s (pid %d) is not running", n, pid)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "a1.token")); err == nil {
		t.Fatal("a join token file was left behind")
	}

	addrs := []string{}
	for i := range 3 {
		addrs = append(addrs, "https://127.0.0.1:"+strconv.Itoa(base+10*i))
	}
	ca := filepath.Join(dir, "pki", "ca.pem")
	submit := func(runID string, extra ...string) map[string]any {
		t.Helper()
		args := append([]string{"intent", "sign", "--key", "dev-orchestrator=" + filepath.Join(dir, "orchestrator.key"),
			"--tenant", "dev", "--principal", "bot", "--run", runID, "--tool", "echo", "--params", `{"msg":"hello"}`}, extra...)
		intent, code := run(t, "", args...)
		if code != 0 {
			t.Fatalf("intent sign: exit %d", code)
		}
		out, code := run(t, intent, "intent", "submit", "--server", strings.Join(addrs, ","), "--ca", ca, "--wait", "20s")
		var r map[string]any
		if json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("intent submit: %q exit %d", out, code)
		}
		if state, _ := r["state"].(string); code != exitFor(state, true) {
			t.Fatalf("intent submit: %q exit %d, want %d", out, code, exitFor(state, true))
		}
		return r
	}
	if r := submit("r1"); r["state"] != "completed" {
		t.Fatalf("an intent for any agent: %v", r)
	}
	r := submit("r2", "--target-node", "a2")
	if r["state"] != "completed" {
		t.Fatalf("an intent for a2: %v", r)
	}

	// The nodes' names, as the printed `writ nodes list` shows them.
	admin := struct {
		AdminToken string `json:"admin_token"`
	}{}
	b, err := os.ReadFile(filepath.Join(dir, "dev.json"))
	if err != nil || json.Unmarshal(b, &admin) != nil || admin.AdminToken == "" {
		t.Fatalf("dev.json: %v", err)
	}
	list := exec.Command(writBin, "nodes", "list", "--server", strings.Join(addrs, ","), "--ca", ca)
	list.Env = append(os.Environ(), "WRIT_TOKEN="+admin.AdminToken)
	lo, err := list.Output()
	if err != nil {
		t.Fatalf("nodes list: %v", err)
	}
	var nodes struct {
		Nodes []struct{ ID, Name, Status string } `json:"nodes"`
	}
	if err := json.Unmarshal(lo, &nodes); err != nil {
		t.Fatalf("nodes list: %v: %s", err, lo)
	}
	byID := map[string]string{}
	for _, n := range nodes.Nodes {
		byID[n.ID] = n.Name
	}
	d, _ := r["dispatch"].(map[string]any)
	if id, _ := d["node"].(string); byID[id] != "a2" {
		t.Fatalf("the intent for a2 ran on %q (%v); nodes %v", byID[id], d, nodes.Nodes)
	}

	// up again: everything is running, nothing new starts.
	if out := script("up"); !strings.Contains(out, "s1 is already running") || !strings.Contains(out, "agent a2 is already running") {
		t.Fatalf("a second up said:\n%s", out)
	}
	if again := pids(); len(again) != 5 || again["s1"] != started["s1"] || again["a1"] != started["a1"] {
		t.Fatalf("a second up changed the processes: %v, were %v", again, started)
	}

	if out := script("down"); !strings.Contains(out, "cluster: stopped") {
		t.Fatalf("down said:\n%s", out)
	}
	for n, pid := range started {
		// Reaped by init, not by us: a stopped process is gone, or a zombie
		// for an instant.
		deadline := time.Now().Add(10 * time.Second)
		for syscall.Kill(pid, 0) == nil && !zombie(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("%s (pid %d) still runs after down", n, pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if left := pids(); len(left) != 0 {
		t.Fatalf("pid files left after down: %v", left)
	}
}

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
}
