package main_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/protocol"
)

// cluster is one `writ server` over TLS taking node sessions, with a tenant,
// an orchestrator key, a permissive policy and the tools the test registers.
type cluster struct {
	serverSetup
	server string // https://addr
	cmd    *exec.Cmd
}

func startServer(t *testing.T) *cluster {
	t.Helper()
	s := setupServer(t, nil)
	cmd := exec.Command(writBin, "server", "--config", s.config)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			ready <- sc.Text()
		}
	}()
	select {
	case line := <-ready:
		if !strings.Contains(line, "node sessions udp://") {
			t.Fatalf("first line: %q", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("writ server did not start")
	}
	c := &cluster{serverSetup: s, server: "https://" + s.addr, cmd: cmd}
	if _, code := run(t, "", "keygen", "hmac", "--id", "orch", "--dir", s.dir); code != 0 {
		t.Fatal("keygen")
	}
	c.admin(t, "tenant", "put", "acme")
	c.admin(t, "key", "add", "--tenant", "acme", "--id", "orch", "--secret-file", filepath.Join(s.dir, "orch.key"))
	c.admin(t, "policy", "apply", "-f", writeFile(t, s.dir, "p.cedar", "@id(\"all\")\npermit (principal, action == Writ::Action::\"invoke\", resource) when { principal.tenant == \"acme\" };\n"))
	return c
}

func (c *cluster) admin(t *testing.T, args ...string) string {
	t.Helper()
	out, code := run(t, "", append(args, "--server", c.server, "--token", c.token, "--ca", c.ca)...)
	if code != 0 {
		t.Fatalf("writ %s: %q exit %d", strings.Join(args, " "), out, code)
	}
	return out
}

// tool registers a tool whose manifest is m, and returns m for allowlists.
func (c *cluster) tool(t *testing.T, name, manifest string) {
	t.Helper()
	c.admin(t, "tool", "apply", "-f", writeFile(t, c.dir, name+".tool.json", `{"name":"`+name+`","manifest":`+manifest+`}`))
}

func (c *cluster) submit(t *testing.T, tool, params, wait string) map[string]any {
	t.Helper()
	intent, code := run(t, "", "intent", "sign", "--key", "orch="+filepath.Join(c.dir, "orch.key"), "--tenant", "acme",
		"--principal", "bot", "--run", "r", "--tool", tool, "--params", params)
	if code != 0 {
		t.Fatal("intent sign")
	}
	out, code := run(t, intent, "intent", "submit", "--server", c.server, "--ca", c.ca, "--wait", wait)
	var r map[string]any
	if jsonx.UnmarshalLenient([]byte(out), &r) != nil {
		t.Fatalf("submit: %q exit %d", out, code)
	}
	d, _ := time.ParseDuration(wait)
	if state, _ := r["state"].(string); code != exitFor(state, d > 0) {
		t.Fatalf("submit: %q exit %d, want %d", out, code, exitFor(state, d > 0))
	}
	return r
}

// agent is a `writ agent` process with its own data directory and allowlist.
type agent struct {
	dir, tools string
	extra      []string // more flags
	cmd        *exec.Cmd
	log        *os.File
}

// startAgent enrolls (first start, with a fresh join token) and runs an agent
// whose allowlist holds manifests (name → manifest JSON).
func (c *cluster) startAgent(t *testing.T, a *agent, manifests map[string]string) {
	t.Helper()
	if a.dir == "" {
		a.dir, a.tools = t.TempDir(), t.TempDir()
		os.Chmod(a.tools, 0o755)
		for name, m := range manifests {
			writeFile(t, a.tools, name+".json", m)
		}
	}
	args := []string{"agent", "--server", c.addr, "--data-dir", a.dir, "--tools-dir", a.tools, "--name", "test-node"}
	args = append(args, a.extra...)
	if _, err := os.Stat(filepath.Join(a.dir, "node.json")); err != nil {
		var tok struct{ Token string }
		jsonx.UnmarshalLenient([]byte(c.admin(t, "token", "create", "--role", "node", "--labels", "pool=test")), &tok)
		args = append(args, "--token", tok.Token)
	}
	a.log, _ = os.CreateTemp(t.TempDir(), "agent-log")
	a.cmd = exec.Command(writBin, args...)
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.cmd.Process.Kill(); a.cmd.Wait() })
	c.waitNode(t, "ready", a)
}

// waitNode waits until the (only) node has status.
func (c *cluster) waitNode(t *testing.T, status string, a *agent) {
	t.Helper()
	a.waitFor(t, "the node to become "+status, func() bool {
		var out struct {
			Nodes []struct{ Status string } `json:"nodes"`
		}
		jsonx.UnmarshalLenient([]byte(c.admin(t, "nodes", "list")), &out)
		return len(out.Nodes) == 1 && out.Nodes[0].Status == status
	})
}

// waitFor is eventually.True that logs the agent's log when the wait fails
// the test.
func (a *agent) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waited := false
	defer func() {
		if !waited {
			b, _ := os.ReadFile(a.log.Name())
			t.Logf("agent log:\n%s", b)
		}
	}()
	eventually.True(t, what, cond)
	waited = true
}

func echoManifest(name string) string {
	return `{"name":"` + name + `","tier":"wasm","module":"` + filepath.Join(toolsDir, "echo.wasm") + `"}`
}

// TestAgentRunsOverQUIC: a real server and a real agent process — enrollment
// with a join token pinned to the CA, a QUIC session with client
// certificates, a dispatch re-verified and run in the wasm tier, and the
// signed result recorded with a receipt.
func TestAgentRunsOverQUIC(t *testing.T) {
	t.Parallel()
	c := startServer(t)
	c.tool(t, "echo", echoManifest("echo"))
	// The node's own labels join its token's (pool=test), which win.
	a := &agent{extra: []string{"--labels", "gpu=none,pool=mine"}}
	c.startAgent(t, a, map[string]string{"echo": echoManifest("echo")})
	r := c.submit(t, "echo", `{"msg":"over quic"}`, "60s")
	res, _ := r["result"].(map[string]any)
	wantHash := protocol.HashBytes([]byte(`{"msg":"over quic"}`))
	if r["state"] != "completed" || res == nil || res["type"] != protocol.ResultTypeV2 || res["captured_hash"] != wantHash ||
		res["output"] != nil || r["receipt_index"] == nil {
		t.Fatalf("intent: %v", r)
	}
	// The output came beside the result over QUIC, was checked against its
	// captured_hash, and is served to an entitled read (here the admin's).
	var got struct {
		Output        string `json:"output"`
		CapturedHash  string `json:"captured_hash"`
		CapturedBytes int64  `json:"captured_bytes"`
	}
	answer := c.admin(t, "intent", "output", r["intent_id"].(string))
	if jsonx.UnmarshalLenient([]byte(answer), &got) != nil || got.Output != `{"msg":"over quic"}` || got.CapturedHash != wantHash || got.CapturedBytes != 19 {
		t.Fatalf("intent output: %q", answer)
	}
	// A join token is used once: a second enrollment with it is refused.
	var nodes struct {
		Nodes []struct {
			ID, Name string
			Labels   map[string]string `json:"labels"`
		} `json:"nodes"`
	}
	jsonx.UnmarshalLenient([]byte(c.admin(t, "nodes", "list")), &nodes)
	if len(nodes.Nodes) != 1 || nodes.Nodes[0].Name != "test-node" {
		t.Fatalf("nodes: %+v", nodes)
	}
	if l := nodes.Nodes[0].Labels; len(l) != 2 || l["gpu"] != "none" || l["pool"] != "test" {
		t.Errorf("labels %v: want the node's gpu=none and the token's pool=test", l)
	}
	// Revoked: the session is closed and the node can never reconnect.
	c.admin(t, "nodes", "revoke", nodes.Nodes[0].ID)
	done := make(chan error, 1)
	go func() { done <- a.cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
			t.Fatalf("revoked agent exited with %v, want exit 3", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a revoked agent kept running")
	}
	again := exec.Command(writBin, "agent", "--server", c.addr, "--data-dir", a.dir, "--tools-dir", a.tools)
	out, err := again.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(string(out), "revoked") {
		t.Fatalf("a revoked node reconnecting: %v: %s", err, out)
	}
	if r := c.submit(t, "echo", `{}`, "0s"); r["state"] != "rejected" {
		t.Fatalf("with the only node revoked: %v, want no_eligible_node", r)
	}
}

// TestAgentKilledMidRun: kill -9 of the agent while the tool runs gives the
// intent an unknown outcome once the agent is back, and the tool never runs
// a second time (the witness file counts runs).
func TestAgentKilledMidRun(t *testing.T) {
	t.Parallel()
	testtier.Slow(t, "a crash: kills an agent mid-run and starts it again")
	c := startServer(t)
	manifest := `{"name":"witness","tier":"process","command":{"path":"` + witnessBin + `"}}`
	c.tool(t, "witness", manifest)
	// The node owner lets process-tier tools write the witness directory.
	dir := witnessDir(t)
	a := &agent{extra: []string{"--process-read-write", dir}}
	c.startAgent(t, a, map[string]string{"witness": manifest})
	runs, release := filepath.Join(dir, "runs"), filepath.Join(dir, "release")
	params, _ := jsonx.Marshal(map[string]string{"file": runs, "wait_for": release})
	r := c.submit(t, "witness", string(params), "0s")
	id, _ := r["intent_id"].(string)
	a.waitFor(t, fmt.Sprintf("the tool to start (intent %v)", r), func() bool {
		b, _ := os.ReadFile(runs)
		return len(b) > 0
	})
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.cmd.Wait()
	os.WriteFile(release, nil, 0o644) // a tool that survived its agent would finish now
	c.startAgent(t, a, nil)
	out, code := run(t, "", "intent", "get", id, "--server", c.server, "--ca", c.ca, "--wait", "10s",
		"--tenant", "acme", "--key", "orch="+filepath.Join(c.dir, "orch.key"))
	var got struct {
		State string
		Error struct{ Code string }
	}
	if code != 4 || jsonx.UnmarshalLenient([]byte(out), &got) != nil || got.State != "unknown" || got.Error.Code != "interrupted" {
		log, _ := os.ReadFile(a.log.Name())
		t.Fatalf("after the agent's crash: %q exit %d; agent log:\n%s", out, code, log)
	}
	time.Sleep(500 * time.Millisecond) // a second run, if one were coming, has time to show
	if b, _ := os.ReadFile(runs); strings.Count(string(b), "ran ") != 1 {
		t.Fatalf("the tool ran %d times: %q", strings.Count(string(b), "ran "), b)
	}
}

// witnessDir is a directory process-tier tools may write: they run as an
// unprivileged user (65534) when the agent is root, so it lies outside the
// test's own 0700 temporary directory.
func witnessDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "writ-witness-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// placeExecutable puts the program src at dst for a test to run. It links
// rather than writes: while this process holds a file open for writing, a
// child another test forks meanwhile inherits that descriptor until its own
// exec, and running the file then fails with "text file busy". Across file
// systems, cp writes the copy in a process of its own.
func placeExecutable(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.Link(src, dst); err == nil {
		return
	}
	if out, err := exec.Command("cp", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp %s %s: %v: %s", src, dst, err, out)
	}
}
