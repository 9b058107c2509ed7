package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/client"
	"github.com/writhq/writ/protocol"
)

// TestAgentsSessionServerKilled (issue 4, acceptance b): three servers and
// two agents. Agent a1 knows only the two followers, so its session is held
// by a follower, which relays what the node records to the leader; a2 knows
// all three servers. While intents stream in, and three of them are running
// on a1 waiting for a release file, the server holding a1's session is
// killed with SIGKILL, and the release file written. a1 reconnects to the
// other follower and runs intents there; every admitted intent completes,
// the witness shows each ran exactly once, and the ledger holds exactly one
// receipt for each (the held runs' results reach it through the outbox,
// resent on the new session).
func TestAgentsSessionServerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short: three writ servers and two agents")
	}
	c := startTestCluster(t)
	leader := c.waitLeader(10 * time.Second)
	var followers []int
	for i := range c.srv {
		if i != leader {
			followers = append(followers, i)
		}
	}
	c.startAgents(followers, []int{0, 1, 2})
	nodes := c.waitNodes("a1's session", func(n map[string]protocol.NodeView) bool { return n["a1"].Server != "" })
	victim := -1
	for i, s := range c.srv {
		if s.id == nodes["a1"].Server {
			victim = i
		}
	}
	if victim < 0 || victim == leader {
		t.Fatalf("a1 knows only the followers, yet its session is with %q", nodes["a1"].Server)
	}
	for i := range c.srv {
		var beat string
		for deadline := time.Now().Add(10 * time.Second); beat == "" && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			n, err := c.nodes(i)
			if err != nil {
				t.Fatal(err)
			}
			beat = n["a1"].LastHeartbeat
		}
		if beat == "" {
			t.Errorf("%s does not know a1's last heartbeat (its session is with %s)", c.srv[i].id, nodes["a1"].Server)
		}
	}

	var (
		mu      sync.Mutex
		keys    = map[string]string{} // admitted intent → its key
		lost    []string              // submissions without an answer
		acked   atomic.Int64
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		seq     atomic.Int64
		release = filepath.Join(c.witness, "release")
	)
	submit := func(cl *client.Client, id, waitFor, node string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := cl.Submit(ctx, c.witnessIntent(id, id, waitFor, node), nil, 0)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			lost = append(lost, id)
		case r.IntentID != id:
			t.Errorf("submitting %s answered intent %s", id, r.IntentID)
		default:
			keys[id] = id
			acked.Add(1)
		}
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := c.client(-1)
			for {
				select {
				case <-stop:
					return
				default:
				}
				submit(cl, fmt.Sprintf("s%04d", seq.Add(1)), "", "")
				time.Sleep(20 * time.Millisecond) // a steady stream, not a flood
			}
		}()
	}
	// Three runs on a1 that last until the release file exists.
	cl := c.client(-1)
	for i := range 3 {
		submit(cl, fmt.Sprintf("held-%d", i), release, "a1")
	}
	for deadline := time.Now().Add(20 * time.Second); c.runs("held-0")+c.runs("held-1")+c.runs("held-2") < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the held runs never started on a1")
		}
	}
	for before := acked.Load(); acked.Load() < before+20; {
		time.Sleep(10 * time.Millisecond)
	}
	c.kill(victim)
	killed := time.Now()
	os.WriteFile(release, nil, 0o644) // the held runs end while a1 has no session
	nodes = c.waitNodes("a1 to reconnect to another server", func(n map[string]protocol.NodeView) bool {
		return n["a1"].Status == "ready" && n["a1"].Server != "" && n["a1"].Server != c.srv[victim].id
	})
	t.Logf("a1's session moved from %s to %s in %s", c.srv[victim].id, nodes["a1"].Server, time.Since(killed).Round(time.Millisecond))
	// a1 runs intents through its new server, while the stream goes on.
	for i := range 5 {
		submit(cl, fmt.Sprintf("after-%d", i), "", "a1")
	}
	for before := acked.Load(); acked.Load() < before+30; {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()

	leader = c.waitLeader(10 * time.Second)
	ids := make([]string, 0, len(keys))
	for id := range keys {
		ids = append(ids, id)
	}
	for _, id := range lost {
		// Unanswered (the server died with it): admitted or not, at most once.
		if ok, err := c.exists(leader, id); err != nil {
			t.Fatal(err)
		} else if ok {
			ids, keys[id] = append(ids, id), id
		}
	}
	t.Logf("%d submissions admitted, %d without an answer", len(ids), len(lost))
	answers := c.waitFinal(ids, 60*time.Second)
	c.checkRuns(leader, answers, keys)
	for _, id := range []string{"held-0", "held-1", "held-2", "after-0", "after-4"} {
		if r := answers[id]; r.Dispatch == nil || r.Dispatch.Node != nodes["a1"].ID {
			t.Errorf("%s was not run by a1: %+v", id, r.Dispatch)
		}
	}
	c.waitCaughtUp(leader)
	c.checkLedgers()
}

// TestAgentsClusterRestart: all three servers are killed and one comes back
// alone. Without a quorum it elects no leader and applies nothing of its log,
// so it does not know the agent's node; it must tell the agent to try again,
// not that it is revoked (an agent stops for good then, and needs a new
// enrollment). Once the other two are back, the agent's node is ready again
// and runs an intent.
func TestAgentsClusterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short: three writ servers and two agents")
	}
	c := startTestCluster(t)
	c.startAgents([]int{0})
	a := c.agents[0]
	for i := range c.srv {
		c.kill(i)
	}
	c.start(0)
	// The agent notices within three heartbeats, dials s1 and is refused.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if exited(a.cmd) {
			t.Fatal("the agent stopped")
		}
		if b, _ := os.ReadFile(c.srv[0].log); strings.Contains(string(b), "does not know the node") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent never reached the restarted server")
		}
	}
	time.Sleep(time.Second) // an agent told it is revoked exits at once
	if exited(a.cmd) {
		t.Fatal("the agent stopped")
	}
	c.start(1)
	c.start(2)
	c.waitLeader(30 * time.Second)
	c.waitNodes("a1 ready again", func(n map[string]protocol.NodeView) bool { return n["a1"].Status == "ready" })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.client(-1).Submit(ctx, c.witnessIntent("after-restart", "after-restart", "", ""), nil, 20*time.Second)
	if err != nil || r.State != "completed" || c.runs("after-restart") != 1 {
		t.Fatalf("an intent after the restart: %+v %v; %d runs", r, err, c.runs("after-restart"))
	}
}

// exited reports whether cmd's process has ended (a zombie not yet waited
// for counts).
func exited(cmd *exec.Cmd) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return true
	}
	// pid (comm) state …: the state follows the last ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

// clusterAgent is one `writ agent` process of a testCluster, with its own
// data directory and allowlist (the witness tool).
type clusterAgent struct {
	name, dir, tools, log string
	servers               []int // the servers it knows, by index
	cmd                   *exec.Cmd
}

// witnessManifest is the process-tier tool that appends a line to the file
// its params name each time it runs (nodeagent/internal/witness).
func witnessManifest() string {
	return `{"name":"witness","tier":"process","command":{"path":"` + witnessBin + `"}}`
}

// startAgents allows tenant acme every tool (a Cedar policy), registers the
// witness tool, and starts one agent per argument, which lists the servers
// that agent knows (indexes into c.srv). Each enrolls with its own join
// token, may write the witness directory, and runs 8 tools at once. It
// returns once every agent's node is ready.
func (c *testCluster) startAgents(servers ...[]int) {
	t := c.t
	t.Helper()
	c.witness = witnessDir(t)
	admin := c.client(-1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, call := range []struct{ method, path, body string }{
		{"PUT", "policy", "@id(\"all\")\npermit (principal, action == Writ::Action::\"invoke\", resource) when { principal.tenant == \"acme\" };\n"},
		{"PUT", "tools", `{"name":"witness","manifest":` + witnessManifest() + `}`},
	} {
		if err := admin.Admin(ctx, call.method, call.path, []byte(call.body)); err != nil {
			t.Fatalf("admin %s %s: %v", call.method, call.path, err)
		}
	}
	t.Cleanup(func() {
		for _, a := range c.agents {
			if a.cmd != nil {
				a.cmd.Process.Kill()
				a.cmd.Wait()
			}
		}
		if t.Failed() {
			for _, a := range c.agents {
				b, _ := os.ReadFile(a.log)
				lines := strings.Split(string(b), "\n")
				t.Logf("agent %s log (last lines):\n%s", a.name, strings.Join(lines[max(0, len(lines)-25):], "\n"))
			}
		}
	})
	for i, list := range servers {
		a := &clusterAgent{name: fmt.Sprintf("a%d", i+1), dir: t.TempDir(), tools: t.TempDir(), servers: list}
		a.log = filepath.Join(c.dir, a.name+".log")
		os.Chmod(a.tools, 0o755)
		writeFile(t, a.tools, "witness.json", witnessManifest())
		tok, err := admin.CreateJoinToken(ctx, map[string]string{"pool": "test"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		c.agents = append(c.agents, a)
		c.startAgent(a, tok.Token)
	}
	c.waitNodes("every agent's node ready", func(nodes map[string]protocol.NodeView) bool {
		for _, a := range c.agents {
			if nodes[a.name].Status != "ready" {
				return false
			}
		}
		return true
	})
}

// startAgent starts (or restarts) agent a; token enrolls it on first start.
func (c *testCluster) startAgent(a *clusterAgent, token string) {
	c.t.Helper()
	var addrs []string
	for _, i := range a.servers {
		addrs = append(addrs, c.srv[i].api)
	}
	args := []string{"agent", "--server", strings.Join(addrs, ","), "--data-dir", a.dir, "--tools-dir", a.tools,
		"--name", a.name, "--process-read-write", c.witness, "--concurrency", "8"}
	if token != "" {
		args = append(args, "--token", token)
	}
	logf, err := os.OpenFile(a.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	defer logf.Close()
	a.cmd = exec.Command(writBin, args...)
	a.cmd.Stdout, a.cmd.Stderr = logf, logf
	if err := a.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
}

// nodes reads the nodes from server i (-1: any that answers), by name.
func (c *testCluster) nodes(i int) (map[string]protocol.NodeView, error) {
	// A deadline for a server that does not answer, not a speed.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes, err := c.client(i).Nodes(ctx)
	if err != nil {
		return nil, err
	}
	m := map[string]protocol.NodeView{}
	for _, n := range nodes {
		m[n.Name] = n
	}
	return m, nil
}

// waitNodes waits, up to 30 s, until ok holds of the nodes as the leader
// sees them, and returns them.
func (c *testCluster) waitNodes(what string, ok func(map[string]protocol.NodeView) bool) map[string]protocol.NodeView {
	c.t.Helper()
	var last map[string]protocol.NodeView
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		nodes, err := c.nodes(c.waitLeader(10 * time.Second))
		if err != nil {
			continue
		}
		if last = nodes; ok(nodes) {
			return nodes
		}
	}
	c.t.Fatalf("waiting for %s: nodes %+v", what, last)
	return nil
}

// signIntent signs an intent of tenant acme for tool, optionally for one node.
func (c *testCluster) signIntent(tool, id, key, params, node string) []byte {
	now := time.Now().UTC()
	in := &protocol.Intent{
		Type: "writ.intent/v1", ID: id, Tenant: "acme", Principal: "bot", RunID: "run", Tool: tool,
		Params: jsontext.Value(params), IdempotencyKey: key, IssuedAt: protocol.FormatTime(now),
		ExpiresAt: protocol.FormatTime(now.Add(10 * time.Minute)), KeyID: "orch",
	}
	if node != "" {
		in.Target = &protocol.Target{Node: node}
	}
	in.SetPayloadHash()
	in.Sign(c.secret)
	b, err := json.Marshal(in)
	if err != nil {
		c.t.Fatal(err)
	}
	return b
}

// witnessIntent signs an intent of the witness tool whose runs are counted in
// the file named after its key; with waitFor the run lasts until that file
// exists (at most 20 s).
func (c *testCluster) witnessIntent(id, key, waitFor, node string) []byte {
	p := map[string]string{"file": filepath.Join(c.witness, key)}
	if waitFor != "" {
		p["wait_for"] = waitFor
	}
	params, _ := json.Marshal(p)
	return c.signIntent("witness", id, key, string(params), node)
}

// runs counts the witness tool's runs for an idempotency key.
func (c *testCluster) runs(key string) int {
	b, _ := os.ReadFile(filepath.Join(c.witness, key))
	return strings.Count(string(b), "ran ")
}

// waitFinal waits, up to d in all, until each intent is in a final state,
// and returns what the cluster answers about each (a failover client, admin
// reads). An intent still not final at the deadline fails the test.
func (c *testCluster) waitFinal(ids []string, d time.Duration) map[string]*client.IntentResponse {
	c.t.Helper()
	out := make(map[string]*client.IntentResponse, len(ids))
	var mu sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	work := make(chan string)
	errs := make(chan error, 1)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := c.client(-1)
			for id := range work {
				var r *client.IntentResponse
				var err error
				for {
					left := time.Until(deadline)
					ctx, cancel := context.WithTimeout(context.Background(), left+5*time.Second)
					r, err = cl.Intent(ctx, id, min(max(left, 0), 10*time.Second).Truncate(time.Second))
					cancel()
					if (err == nil && final(r.State)) || time.Now().After(deadline) {
						break
					}
					if err != nil {
						time.Sleep(100 * time.Millisecond)
					}
				}
				if err == nil && !final(r.State) {
					err = fmt.Errorf("intent %s is still %s", id, r.State)
				}
				if err != nil {
					select {
					case errs <- fmt.Errorf("%s: %w", id, err):
					default:
					}
					continue
				}
				mu.Lock()
				out[id] = r
				mu.Unlock()
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		c.t.Fatalf("not every intent reached a final outcome within %s: %v", d, err)
	default:
	}
	return out
}

func final(state string) bool {
	return state != "queued" && state != "dispatched" && state != "pending_approval" && state != ""
}

// receiptsByIntent reads every receipt of server i's ledger once a checkpoint
// covers at least size leaves, and returns the receipts of each intent (the
// admin entries among the leaves are left out).
func (c *testCluster) receiptsByIntent(i int, size uint64) map[string][]protocol.Receipt {
	c.t.Helper()
	cl := c.client(i)
	var have int64
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		cp, err := cl.Checkpoint(ctx)
		cancel()
		if err == nil && uint64(cp.Size) >= size {
			have = cp.Size
			break
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: no checkpoint covers %d receipts (%v, %v)", c.srv[i].id, size, cp, err)
		}
	}
	receipts := make([]protocol.Receipt, have)
	var wg sync.WaitGroup
	var failed error
	var mu sync.Mutex
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int64(w); k < have; k += 4 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				raw, err := cl.Receipt(ctx, uint64(k))
				cancel()
				var rp struct {
					Receipt protocol.Receipt `json:"receipt"`
				}
				if err == nil {
					err = json.Unmarshal(raw, &rp)
				}
				if err != nil {
					mu.Lock()
					failed = fmt.Errorf("receipt %d: %w", k, err)
					mu.Unlock()
					return
				}
				receipts[k] = rp.Receipt
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		c.t.Fatal(failed)
	}
	by := map[string][]protocol.Receipt{}
	for _, r := range receipts {
		if r.Type == protocol.ReceiptType { // not an admin entry
			by[r.IntentID] = append(by[r.IntentID], r)
		}
	}
	return by
}

// checkRuns requires, of the admitted intents' final answers (by intent id,
// with their idempotency keys), that every one completed, that the witness
// ran exactly once for each, and that the ledger of server i holds exactly
// one receipt for each, the one its answer names, and nothing superseding.
func (c *testCluster) checkRuns(i int, answers map[string]*client.IntentResponse, keys map[string]string) {
	c.t.Helper()
	states := map[string]int{}
	var need uint64
	for id, r := range answers {
		states[r.State]++
		if r.ReceiptIndex == nil {
			c.t.Errorf("%s (%s) has no receipt", id, r.State)
			continue
		}
		need = max(need, *r.ReceiptIndex+1)
	}
	c.t.Logf("%d admitted intents, final states %v", len(answers), states)
	by := c.receiptsByIntent(i, need)
	bad := 0
	for id, r := range answers {
		key := keys[id]
		n := c.runs(key)
		rs := by[id]
		var problem string
		switch {
		case r.State != "completed":
			problem = fmt.Sprintf("ended %s (%v), want completed; the tool ran %d times; result %s", r.State, r.Error, n, r.Result)
		case n != 1:
			problem = fmt.Sprintf("completed, and the tool ran %d times", n)
		case len(rs) != 1:
			problem = fmt.Sprintf("has %d receipts in %s's ledger, want 1", len(rs), c.srv[i].id)
		case r.ReceiptIndex == nil || rs[0].Index != *r.ReceiptIndex || rs[0].Outcome != "completed" || rs[0].Supersedes != nil:
			problem = fmt.Sprintf("answer names receipt %v, the ledger holds %+v", r.ReceiptIndex, rs[0])
		}
		if problem != "" {
			if bad++; bad <= 10 {
				c.t.Errorf("intent %s (key %s): %s", id, key, problem)
			}
		}
	}
	if bad > 10 {
		c.t.Errorf("… and %d more", bad-10)
	}
}
