package controlplane_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/protocol"
)

type devServer struct {
	dir   string // the data directory (tls/ holds the dev cluster CA)
	s     *controlplane.Server
	creds *controlplane.DevCredentials
	c     *client.Client
	admin *client.Client
	node  *simNode
}

func startDev(t testing.TB) *devServer { t.Helper(); return startDevWith(t, nil) }

// startDevWith starts a dev server whose configuration mutate changes.
func startDevWith(t testing.TB, mutate func(*controlplane.Config)) *devServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := controlplane.DefaultConfig()
	base.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	base.TickInterval = 100 * time.Millisecond
	if mutate != nil {
		mutate(&base)
	}
	dir := t.TempDir()
	s, creds, err := controlplane.StartDev(ctx, controlplane.DevConfig{
		DataDir: dir, HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", ToolsDir: "/nonexistent", Base: base,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	for s.Addr() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	addr := "http://" + s.Addr().String()
	c := client.New(addr, "")
	secret, _ := base64.StdEncoding.DecodeString(creds.Orchestrator.Secret)
	c.SignReads(creds.Tenant, creds.Orchestrator.KeyID, secret)
	d := &devServer{dir: dir, s: s, creds: creds, c: c, admin: client.New(addr, creds.AdminToken)}
	d.node = enrollSim(t, s, addr)
	if err := d.node.connect(t, s.AgentAddr(), toolHashes(t, addr)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.node.close)
	waitReady(t, s, d.node.ID)
	return d
}

// waitReady waits until the FSM has the node ready (the session's hello is
// committed before welcome, so this is at once).
func waitReady(t testing.TB, s *controlplane.Server, id string) {
	t.Helper()
	eventually.True(t, "node "+id+" to become ready", func() bool {
		n, ok := s.Node(id)
		return ok && n.Status == "ready"
	})
}

func (d *devServer) intent(t testing.TB, tool, params string, mod ...func(*protocol.Intent)) []byte {
	t.Helper()
	now := time.Now().UTC()
	in := &protocol.Intent{
		Type: "writ.intent/v1", ID: fmt.Sprintf("int-%d", time.Now().UnixNano()), Tenant: d.creds.Tenant,
		Principal: "support-bot", RunID: "run-1", Tool: tool, Params: jsontext.Value(params),
		IdempotencyKey: fmt.Sprintf("idem-%d", time.Now().UnixNano()), IssuedAt: protocol.FormatTime(now),
		ExpiresAt: protocol.FormatTime(now.Add(5 * time.Minute)), KeyID: d.creds.Orchestrator.KeyID,
	}
	for _, m := range mod {
		m(in)
	}
	secret, _ := base64.StdEncoding.DecodeString(d.creds.Orchestrator.Secret)
	if err := in.SetPayloadHash(); err != nil {
		t.Fatal(err)
	}
	if err := in.Sign(secret); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(in)
	return b
}

func (d *devServer) approval(t *testing.T, raw []byte, decision string) []byte {
	t.Helper()
	in, err := protocol.DecodeIntent(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	nonce := make([]byte, 16)
	copy(nonce, fmt.Sprint(time.Now().UnixNano()))
	a := &protocol.Approval{
		Type: "writ.approval/v1", ID: fmt.Sprintf("apr-%d", time.Now().UnixNano()), IntentID: in.ID,
		PayloadHash: in.PayloadHash, Tenant: in.Tenant, Approver: d.creds.Approver.Approver, Decision: decision,
		Nonce: base64.StdEncoding.EncodeToString(nonce), IssuedAt: protocol.FormatTime(now),
		ExpiresAt: protocol.FormatTime(now.Add(time.Minute)), KeyID: d.creds.Approver.KeyID,
	}
	seed, _ := base64.StdEncoding.DecodeString(d.creds.Approver.Seed)
	if err := a.Sign(ed25519.NewKeyFromSeed(seed)); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(a)
	return b
}

func apiCode(err error) protocol.Code {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestSubmitAndIdempotency(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	raw := d.intent(t, "echo", `{"msg":"hi"}`)
	r, err := d.c.Submit(ctx, raw, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if (r.State != "dispatched" && r.State != "completed") || r.Policy == nil || r.Policy.Decision != "allow" || len(r.Policy.Policies) == 0 {
		t.Fatalf("echo intent: %+v", r)
	}
	again, err := d.c.Submit(ctx, raw, nil, 0)
	if err != nil || again.IntentID != r.IntentID {
		t.Fatalf("repeat: got %+v %v, want the original intent", again, err)
	}
	in, _ := protocol.DecodeIntent(raw, 0)
	other := d.intent(t, "echo", `{"msg":"other"}`, func(x *protocol.Intent) { x.IdempotencyKey = in.IdempotencyKey })
	if _, err := d.c.Submit(ctx, other, nil, 0); apiCode(err) != "idempotency_conflict" {
		t.Fatalf("same key, other params: got %v, want idempotency_conflict", err)
	}
	got, err := d.c.Intent(ctx, r.IntentID, 10*time.Second)
	if err != nil || got.State != "completed" || got.Dispatch == nil || got.Dispatch.Node != d.node.ID {
		t.Fatalf("GET: %+v %v", got, err)
	}
	res, err := protocol.DecodeResult(got.Result, 0)
	if err != nil || res.Output != "" || res.DispatchID != got.Dispatch.ID {
		t.Fatalf("result: %+v %v", res, err)
	}
	if out, ok, err := client.ResponseOutput(got); !ok || err != nil || string(out) != `{"msg":"hi"}` || res.CheckCaptured(out) != nil {
		t.Fatalf("output: %q %v %v", out, ok, err)
	}
	if d.node.Runs.Load() != 1 {
		t.Fatalf("the node ran %d times, want once", d.node.Runs.Load())
	}
	if _, err := d.c.Intent(ctx, "nope", 0); apiCode(err) != "not_found" {
		t.Fatalf("GET unknown: %v", err)
	}
}

// TestIntentTarget: an intent's target (a node by id or name, labels) is
// kept through admission and decides where it may run: one that names a
// node or labels no ready node has is rejected with no_eligible_node, one
// that names the (only) node's id, name or labels runs there. (The target
// was once dropped when the leader proposed the intent, so any node ran it.)
func TestIntentTarget(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	for i, c := range []struct {
		target protocol.Target
		want   string
	}{
		{protocol.Target{Node: "elsewhere"}, "rejected"},
		{protocol.Target{Labels: map[string]string{"zone": "b"}}, "rejected"},
		{protocol.Target{Node: d.node.ID}, "completed"},
		{protocol.Target{Node: "sim"}, "completed"},
		{protocol.Target{Labels: map[string]string{"zone": "a"}}, "completed"},
	} {
		raw := d.intent(t, "echo", fmt.Sprintf(`{"msg":"%d"}`, i), func(x *protocol.Intent) { x.Target = &c.target })
		r, err := d.c.Submit(ctx, raw, nil, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != c.want || (c.want == "rejected" && (r.Error == nil || r.Error.Code != "no_eligible_node")) {
			t.Errorf("target %+v: %s %+v, want %s", c.target, r.State, r.Error, c.want)
		}
	}
}

// TestConcurrentSubmissionsOneKey: many concurrent submissions of one
// idempotency key admit exactly one intent.
func TestConcurrentSubmissionsOneKey(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	raw := d.intent(t, "echo", `{"msg":"once"}`)
	ids := make(chan string, 32)
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := d.c.Submit(context.Background(), raw, nil, 0)
			if err != nil {
				t.Error(err)
				return
			}
			ids <- r.IntentID
		}()
	}
	wg.Wait()
	close(ids)
	seen := map[string]int{}
	for id := range ids {
		seen[id]++
	}
	if len(seen) != 1 {
		t.Fatalf("one key admitted %d intents: %v", len(seen), seen)
	}
}

func TestRefusedBeforeRaft(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	raw := d.intent(t, "echo", `{"msg":"hi"}`)
	in, err := protocol.DecodeIntent(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The signature's last character changed.
	tampered := []byte(strings.Replace(string(raw), `"sig":"`+in.Sig+`"`, `"sig":"`+in.Sig[:len(in.Sig)-1]+`x"`, 1))
	if bytes.Equal(tampered, raw) {
		t.Fatal("the signature was not tampered with")
	}
	for name, c := range map[string]struct {
		body []byte
		want protocol.Code
	}{
		"bad signature": {tampered, "bad_signature"},
		"malformed":     {[]byte(`{"type":"writ.intent/v1"}`), "malformed"},
		"unknown key":   {d.intent(t, "echo", `{}`, func(in *protocol.Intent) { in.KeyID = "nobody" }), "unknown_key"},
	} {
		if _, err := d.c.Submit(ctx, c.body, nil, 0); apiCode(err) != c.want {
			t.Errorf("%s: got %v, want %s", name, err, c.want)
		}
	}
	// The tampered intent's id was never recorded.
	if _, err := d.c.Intent(ctx, in.ID, 0); apiCode(err) != "not_found" {
		t.Errorf("a refused intent was recorded: %v", err)
	}
}

func TestRecordedOutcomes(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	for name, c := range map[string]struct {
		raw   []byte
		state string
		code  protocol.Code
	}{
		"unknown tool": {d.intent(t, "rm_rf", `{}`), "rejected", "unknown_tool"},
		"ttl too long": {d.intent(t, "echo", `{}`, func(in *protocol.Intent) {
			in.ExpiresAt = protocol.FormatTime(time.Now().Add(time.Hour))
		}), "rejected", "ttl_too_long"},
	} {
		r, err := d.c.Submit(ctx, c.raw, nil, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.State != c.state || r.Error == nil || r.Error.Code != c.code {
			t.Errorf("%s: got %+v, want %s with %s", name, r, c.state, c.code)
		}
	}
	// Another tenant: its key works, but the dev policy permits only "dev".
	if err := d.admin.Admin(ctx, "PUT", "tenants/globex", []byte(`{"run_budget":0}`)); err != nil {
		t.Fatal(err)
	}
	secret, _ := base64.StdEncoding.DecodeString(d.creds.Orchestrator.Secret)
	body := fmt.Sprintf(`{"secret":%q}`, base64.StdEncoding.EncodeToString(secret))
	if err := d.admin.Admin(ctx, "PUT", "tenants/globex/keys/"+d.creds.Orchestrator.KeyID, []byte(body)); err != nil {
		t.Fatal(err)
	}
	r, err := d.c.Submit(ctx, d.intent(t, "echo", `{}`, func(in *protocol.Intent) { in.Tenant = "globex" }), nil, 0)
	if err != nil || r.State != "denied" || r.Error == nil || r.Error.Code != "policy_denied" {
		t.Fatalf("other tenant: got %+v %v, want denied by policy", r, err)
	}
	// A tool with a strict schema refuses params that do not fit it.
	spec := `{"name":"greet","input_schema":{"type":"object","required":["name"]},"manifest":{"name":"greet","tier":"wasm","module":"/x.wasm"}}`
	if err := d.admin.Admin(ctx, "PUT", "tools", []byte(spec)); err != nil {
		t.Fatal(err)
	}
	r, err = d.c.Submit(ctx, d.intent(t, "greet", `{"nom":"x"}`), nil, 0)
	if err != nil || r.State != "rejected" || r.Error.Code != "params_invalid" {
		t.Fatalf("params: got %+v %v, want params_invalid", r, err)
	}
	// Rejected before the policy was consulted: no policy decision, and the
	// error says what failed.
	if r.Policy != nil || !strings.Contains(r.Error.Message, "name") {
		t.Fatalf("params: policy %+v, error %q: want no policy and the missing property named", r.Policy, r.Error.Message)
	}
	t.Logf("params_invalid says: %s", r.Error.Message)
	if err := client.New("http://"+d.s.Addr().String(), "wrong").Admin(ctx, "PUT", "tenants/x", []byte(`{}`)); apiCode(err) != "unauthorized" {
		t.Fatalf("admin with a wrong token: got %v", err)
	}
}

func TestApprovalFlow(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	raw := d.intent(t, "echo_approval", `{"msg":"wire money"}`)
	r, err := d.c.Submit(ctx, raw, nil, 0)
	if err != nil || r.State != "pending_approval" {
		t.Fatalf("submit: %+v %v", r, err)
	}
	apr := d.approval(t, raw, "approve")
	r, err = d.c.Approve(ctx, apr)
	// The dev server's own agent may have finished it by the time the answer is made.
	if err != nil || (r.State != "dispatched" && r.State != "completed") || r.Approval == nil || r.Approval.Approver != d.creds.Approver.Approver {
		t.Fatalf("approve: %+v %v", r, err)
	}
	if _, err := d.c.Approve(ctx, apr); apiCode(err) != "approval_replayed" {
		t.Fatalf("the same approval twice: got %v, want approval_replayed", err)
	}
	// Deny in the submit body ends the intent at once.
	raw2 := d.intent(t, "echo_approval", `{"msg":"no"}`)
	r, err = d.c.Submit(ctx, raw2, d.approval(t, raw2, "deny"), 0)
	if err != nil || r.State != "denied" {
		t.Fatalf("deny in the body: %+v %v", r, err)
	}
}

func TestWaitEndsAtExpiry(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	// Far enough ahead to be admitted before it on a loaded machine.
	raw := d.intent(t, "echo_approval", `{}`, func(in *protocol.Intent) {
		in.ExpiresAt = protocol.FormatTime(time.Now().Add(4 * time.Second))
	})
	start := time.Now()
	r, err := d.c.Submit(ctx, raw, nil, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != "expired" || r.Error == nil || r.Error.Code != "expired" {
		t.Fatalf("got %+v, want expired", r)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("wait returned after %s; expiry should end it", took)
	}
}

func TestDevRefusesTakenAddress(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	base := controlplane.DefaultConfig()
	base.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := controlplane.StartDev(ctx, controlplane.DevConfig{
		DataDir: t.TempDir(), HTTPAddr: d.s.Addr().String(), RaftAddr: "127.0.0.1:0", Base: base,
	})
	if err == nil {
		t.Fatal("a second dev server started on an address in use")
	}
}

// TestApprovalInSubmitBody: an approval sent with a submission must be for
// that intent, and is ignored when the intent needs none.
func TestApprovalInSubmitBody(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	plain := d.intent(t, "echo", `{}`)
	r, err := d.c.Submit(ctx, plain, d.approval(t, plain, "approve"), 0)
	if err != nil || (r.State != "dispatched" && r.State != "completed") || r.Approval != nil {
		t.Fatalf("an intent that needs no approval, sent with one: %+v %v", r, err)
	}
	pending := d.intent(t, "echo_approval", `{}`)
	other := d.intent(t, "echo_approval", `{"x":1}`)
	if _, err := d.c.Submit(ctx, other, nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.Submit(ctx, pending, d.approval(t, other, "approve"), 0); apiCode(err) != "malformed" {
		t.Fatalf("an approval of another intent in the body: got %v, want malformed", err)
	}
	in, _ := protocol.DecodeIntent(other, 0)
	if r, err := d.c.Intent(ctx, in.ID, 0); err != nil || r.State != "pending_approval" {
		t.Fatalf("the other intent was approved through someone else's submission: %+v %v", r, err)
	}
}

// TestReadsAreAuthenticated: an intent is read with a signed request of its
// tenant or an admin token; anyone else learns nothing, not even that it exists.
func TestReadsAreAuthenticated(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	raw := d.intent(t, "echo", `{}`, func(in *protocol.Intent) { in.ID = "int:with:colons" })
	if _, err := d.c.Submit(ctx, raw, nil, 0); err != nil {
		t.Fatal(err)
	}
	if r, err := d.c.Intent(ctx, "int:with:colons", 10*time.Second); err != nil || r.State != "completed" {
		t.Fatalf("signed read: %+v %v", r, err)
	}
	if r, err := d.admin.Intent(ctx, "int:with:colons", 0); err != nil || r.State != "completed" {
		t.Fatalf("admin read: %+v %v", r, err)
	}
	anon := client.New("http://"+d.s.Addr().String(), "")
	if _, err := anon.Intent(ctx, "int:with:colons", 0); apiCode(err) != "unauthorized" {
		t.Fatalf("unsigned read: got %v, want unauthorized", err)
	}
	// Another tenant's key reads nothing of tenant dev.
	secret, _ := base64.StdEncoding.DecodeString(d.creds.Orchestrator.Secret)
	if err := d.admin.Admin(ctx, "PUT", "tenants/globex/keys/g1", []byte(fmt.Sprintf(`{"secret":%q}`, base64.StdEncoding.EncodeToString(secret)))); err != nil {
		t.Fatal(err)
	}
	other := client.New("http://"+d.s.Addr().String(), "")
	other.SignReads("globex", "g1", secret)
	if _, err := other.Intent(ctx, "int:with:colons", 0); apiCode(err) != "not_found" {
		t.Fatalf("another tenant's read: got %v, want not_found", err)
	}
	forged := client.New("http://"+d.s.Addr().String(), "")
	forged.SignReads(d.creds.Tenant, d.creds.Orchestrator.KeyID, []byte("not the secret, 32 bytes long...."))
	if _, err := forged.Intent(ctx, "int:with:colons", 0); apiCode(err) != "unauthorized" {
		t.Fatalf("a read signed with the wrong secret: got %v, want unauthorized", err)
	}
}
