package main_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// mcpDev is a running writ dev for the writ mcp tests.
type mcpDev struct {
	dir, server string
	creds       *client.Credentials
}

func startMCPDev(t *testing.T) *mcpDev {
	t.Helper()
	dir := t.TempDir()
	addr := freePort(t)
	dev := startWritDev(t, dir, addr, freePort(t))
	t.Cleanup(func() { stopWritDev(t, dev) })
	creds, err := client.LoadCredentials(filepath.Join(dir, "dev.json"))
	if err != nil {
		t.Fatal(err)
	}
	return &mcpDev{dir: dir, server: "http://" + addr, creds: creds}
}

// decide signs an approval (or a denial) of the intent id, whose call was
// tool with params, with writ dev's approver key, and submits it.
func (d *mcpDev) decide(t *testing.T, id, tool, params, decision string) {
	t.Helper()
	hash, err := protocol.PayloadHash(tool, []byte(params))
	if err != nil {
		t.Fatal(err)
	}
	seed, err := base64.StdEncoding.DecodeString(d.creds.Approver.Seed)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	nonce := make([]byte, 16)
	rand.Read(nonce)
	a := &protocol.Approval{
		Type: protocol.KindApproval.Type(), ID: fmt.Sprintf("apr-%d", now.UnixNano()), IntentID: id, PayloadHash: hash,
		Tenant: d.creds.Tenant, Approver: d.creds.Approver.Approver, Decision: decision,
		Nonce:    base64.StdEncoding.EncodeToString(nonce),
		IssuedAt: protocol.FormatTime(now), ExpiresAt: protocol.FormatTime(now.Add(5 * time.Minute)), KeyID: d.creds.Approver.KeyID,
	}
	if err := a.Sign(ed25519.NewKeyFromSeed(seed)); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.New(d.server, "").Approve(context.Background(), raw); err != nil {
		t.Fatalf("approval of %s: %v", id, err)
	}
}

// mcpClient is an MCP client session with the notifications the tests
// watch: progress messages and tool list changes.
type mcpClient struct {
	*mcp.ClientSession
	progress chan *mcp.ProgressNotificationParams
	changed  chan struct{}
}

func newMCPClient(t *testing.T, tr mcp.Transport, version string) *mcpClient {
	t.Helper()
	c := &mcpClient{progress: make(chan *mcp.ProgressNotificationParams, 16), changed: make(chan struct{}, 4)}
	cl := mcp.NewClient(&mcp.Implementation{Name: "writ-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			select {
			case c.progress <- r.Params:
			default:
			}
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.changed <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := cl.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting to writ mcp: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	c.ClientSession = cs
	return c
}

// stdioMCP starts writ mcp as a subprocess over stdio, as desktop hosts do.
func stdioMCP(t *testing.T, d *mcpDev, version string, args ...string) *mcpClient {
	t.Helper()
	cmd := exec.Command(writBin, append([]string{"mcp", "--dev", d.dir, "--poll", "200ms"}, args...)...)
	cmd.Env, cmd.Stderr = withoutWritEnv(), os.Stderr
	return newMCPClient(t, &mcp.CommandTransport{Command: cmd}, version)
}

// httpMCP starts writ mcp --http and returns its URL and bearer token.
func httpMCP(t *testing.T, d *mcpDev, args ...string) (string, string) {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "mcp.token")
	cmd := exec.Command(writBin, append([]string{"mcp", "--dev", d.dir, "--poll", "200ms", "--http", "127.0.0.1:0",
		"--http-token-file", tokenFile}, args...)...)
	cmd.Env = withoutWritEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { interrupt(t, cmd) })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(os.Stderr, line)
			if _, url, ok := strings.Cut(line, "streamable HTTP on "); ok {
				ready <- strings.Fields(url)[0]
			}
		}
	}()
	select {
	case url := <-ready:
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(tokenFile); fi.Mode().Perm() != 0o600 {
			t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
		}
		return url, strings.TrimSpace(string(b))
	case <-time.After(30 * time.Second):
		t.Fatal("writ mcp --http did not start within 30s")
		return "", ""
	}
}

// interrupt stops a writ mcp with SIGINT, which must end it cleanly (exit 0).
func interrupt(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("writ mcp after SIGINT: %v, want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Error("writ mcp did not stop after SIGINT")
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func call(t *testing.T, c *mcpClient, tool string, args any, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r, err := c.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	return r
}

// checkEcho checks a completed echo call: the output as text and as
// structuredContent, and _meta naming the intent and its receipt, whose
// leaf hash is the one the ledger proves.
func checkEcho(t *testing.T, d *mcpDev, r *mcp.CallToolResult, msg string) string {
	t.Helper()
	want := `{"msg":"` + msg + `"}`
	if r.IsError || text(r) != want {
		t.Fatalf("echo %s: isError %v, text %q, want %q", msg, r.IsError, text(r), want)
	}
	if sc, ok := r.StructuredContent.(map[string]any); !ok || sc["msg"] != msg {
		t.Errorf("echo %s: structuredContent %#v", msg, r.StructuredContent)
	}
	id, _ := r.Meta["writ/intent_id"].(string)
	index, ok := r.Meta["writ/receipt_index"].(float64)
	leaf, _ := r.Meta["writ/receipt_leaf_hash"].(string)
	if !strings.HasPrefix(id, "int-") || !ok || leaf == "" || r.Meta["writ/state"] != "completed" {
		t.Fatalf("echo %s: _meta %v", msg, r.Meta)
	}
	// The ledger proves the receipt once a checkpoint covers it.
	var public struct {
		LeafHash string `json:"leaf_hash"`
	}
	eventually.Within(t, 30*time.Second, fmt.Sprintf("receipt %d to be public", int64(index)), func() bool {
		resp, err := http.Get(fmt.Sprintf("%s/v1/receipts/%d", d.server, int64(index)))
		if err != nil {
			t.Fatal(err)
		}
		json.UnmarshalRead(resp.Body, &public, jsonx.Lenient)
		resp.Body.Close()
		return public.LeafHash != ""
	})
	if public.LeafHash != leaf {
		t.Errorf("echo %s: receipt %d has leaf hash %q, _meta says %q", msg, int64(index), public.LeafHash, leaf)
	}
	return id
}

// exerciseMCP runs what both transports must do: list, call, ten concurrent
// calls, a call approved while it waits, a denied call.
func exerciseMCP(t *testing.T, d *mcpDev, c *mcpClient) {
	ctx := context.Background()
	list, err := c.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]*mcp.Tool{}
	for _, tool := range list.Tools {
		names[tool.Name] = tool
	}
	for _, want := range []string{"echo", "echo_approval", "writ_intent_status"} {
		if names[want] == nil {
			t.Fatalf("tools/list has no %s: %v", want, names)
		}
	}
	if names["echo"].InputSchema == nil || names["echo_approval"].Meta["writ/requires_approval"] != true {
		t.Errorf("tools/list: echo %+v, echo_approval meta %v", names["echo"], names["echo_approval"].Meta)
	}

	first := checkEcho(t, d, call(t, c, "echo", map[string]any{"msg": "hi"}, nil), "hi")

	// Ten calls at once: ten intents, each with its own output.
	var wg sync.WaitGroup
	ids := make([]string, 10)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := fmt.Sprintf("m%d", i)
			ids[i] = checkEcho(t, d, call(t, c, "echo", map[string]any{"msg": msg}, nil), msg)
		}()
	}
	wg.Wait()
	seen := map[string]bool{first: true}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("two calls share intent %s", id)
		}
		seen[id] = true
	}

	// A call that needs approval reports that it waits, naming the intent,
	// and returns once approved.
	for _, decision := range []string{protocol.DecisionApprove, protocol.DecisionDeny} {
		params := `{"msg":"` + decision + `"}`
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			done <- call(t, c, "echo_approval", map[string]any{"msg": decision}, mcp.Meta{"progressToken": "p-" + decision})
		}()
		var p *mcp.ProgressNotificationParams
		select {
		case p = <-c.progress:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no progress notification", decision)
		}
		id, _ := p.Meta["writ/intent_id"].(string)
		if id == "" || !strings.Contains(p.Message, id) || !strings.Contains(p.Message, "awaits approval") || p.ProgressToken != "p-"+decision {
			t.Fatalf("%s: progress %+v", decision, p)
		}
		d.decide(t, id, "echo_approval", params, decision)
		r := <-done
		if decision == protocol.DecisionApprove {
			if r.IsError || text(r) != params || r.Meta["writ/intent_id"] != id {
				t.Fatalf("approved call: isError %v %q %v", r.IsError, text(r), r.Meta)
			}
			continue
		}
		if !r.IsError || r.Meta["writ/state"] != "denied" || r.Meta["writ/intent_id"] != id || r.Meta["writ/error_code"] == "" ||
			!strings.Contains(text(r), id) || r.Meta["writ/receipt_index"] == nil {
			t.Fatalf("denied call: isError %v %q %v", r.IsError, text(r), r.Meta)
		}
	}
}

// TestMCPStdio drives writ mcp over stdio with the Go SDK's client against
// a real writ dev, at the SDK's default protocol and at 2025-11-25.
func TestMCPStdio(t *testing.T) {
	t.Parallel()
	d := startMCPDev(t)
	c := stdioMCP(t, d, "")
	exerciseMCP(t, d, c)

	old := stdioMCP(t, d, "2025-11-25")
	checkEcho(t, d, call(t, old, "echo", map[string]any{"msg": "old"}, nil), "old")

	// A tool registered meanwhile is announced and listed.
	tool := writeFile(t, t.TempDir(), "greet.json", `{"name":"greet","description":"says hello","input_schema":{"type":"object"},"manifest":{"name":"greet","tier":"wasm","module":"/opt/greet.wasm"}}`)
	if out, code := run(t, "", "tool", "apply", "-f", tool, "--server", d.server, "--token-file", filepath.Join(d.dir, "admin.token")); code != 0 {
		t.Fatalf("tool apply: %q exit %d", out, code)
	}
	select {
	case <-old.changed:
	case <-time.After(20 * time.Second):
		t.Fatal("no notifications/tools/list_changed after a registration")
	}
	list, err := old.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range list.Tools {
		found = found || (tl.Name == "greet" && strings.HasPrefix(tl.Description, "says hello"))
	}
	if !found {
		t.Errorf("greet is not listed after its registration")
	}

	// A call policy forbids is answered isError with the denial, and
	// nothing runs.
	policy := writeFile(t, t.TempDir(), "policy.cedar", `@id("dev.invoke")
permit (principal, action == Writ::Action::"invoke", resource)
when { principal.tenant == "dev" };

@id("no-blocked")
forbid (principal, action == Writ::Action::"invoke", resource)
when { principal.name == "blocked" };
`)
	if out, code := run(t, "", "policy", "apply", "-f", policy, "--server", d.server, "--token-file", filepath.Join(d.dir, "admin.token")); code != 0 {
		t.Fatalf("policy apply: %q exit %d", out, code)
	}
	blocked := stdioMCP(t, d, "", "--principal", "blocked")
	r := call(t, blocked, "echo", map[string]any{"msg": "no"}, nil)
	id, _ := r.Meta["writ/intent_id"].(string)
	if !r.IsError || r.Meta["writ/state"] != "denied" || id == "" || r.Meta["writ/error_code"] == "" ||
		!strings.Contains(text(r), id) || strings.Contains(text(r), `{"msg":"no"}`) {
		t.Fatalf("a call policy forbids: isError %v %q %v", r.IsError, text(r), r.Meta)
	}
	checkEcho(t, d, call(t, old, "echo", map[string]any{"msg": "allowed"}, nil), "allowed")

	rawStdioRetry(t, d)
}

// rawStdioRetry speaks JSON-RPC to writ mcp over stdio by hand, to send one
// tools/call twice with the same id: both answers name the same intent, and
// another id another.
func rawStdioRetry(t *testing.T, d *mcpDev) {
	t.Helper()
	cmd := exec.Command(writBin, "mcp", "--dev", d.dir)
	cmd.Env, cmd.Stderr = withoutWritEnv(), os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	defer func() {
		if !exited {
			in.Close()
			cmd.Wait()
		}
	}()
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	send := func(msg string) {
		if _, err := io.WriteString(in, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	answer := func(id int) map[string]any {
		t.Helper()
		for lines.Scan() {
			var m map[string]any
			if jsonx.UnmarshalLenient(lines.Bytes(), &m) == nil && m["id"] == float64(id) {
				return m
			}
		}
		t.Fatalf("writ mcp ended before answering request %d", id)
		return nil
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	answer(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	intent := func(id int) string {
		t.Helper()
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"msg":"stdio-once"}}}`, id))
		res, _ := answer(id)["result"].(map[string]any)
		meta, _ := res["_meta"].(map[string]any)
		got, _ := meta["writ/intent_id"].(string)
		if res["isError"] == true || got == "" {
			t.Fatalf("tools/call %d: %v", id, res)
		}
		return got
	}
	first, again, other := intent(5), intent(5), intent(6)
	if first != again || other == first {
		t.Errorf("request 5 twice: intents %s and %s; request 6: %s; want the first two equal, the third not", first, again, other)
	}
	// The client closing its end is a clean exit.
	in.Close()
	exited = true
	if err := cmd.Wait(); err != nil {
		t.Errorf("writ mcp after its client closed stdin: %v, want exit 0", err)
	}
	// So is an interrupt, while the client is still connected.
	cmd = exec.Command(writBin, "mcp", "--dev", d.dir)
	cmd.Env, cmd.Stderr = withoutWritEnv(), os.Stderr
	in, _ = cmd.StdinPipe()
	defer in.Close()
	out, _ = cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines = bufio.NewScanner(out)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	answer(1)
	interrupt(t, cmd)
}

// TestMCPApprovalWait: a call whose approval does not come within
// --approval-wait returns isError with the intent id; writ_intent_status
// answers about it then, and after it is approved.
func TestMCPApprovalWait(t *testing.T) {
	t.Parallel()
	d := startMCPDev(t)
	c := stdioMCP(t, d, "", "--approval-wait", "1s")
	r := call(t, c, "echo_approval", map[string]any{"msg": "later"}, nil)
	id, _ := r.Meta["writ/intent_id"].(string)
	if !r.IsError || id == "" || r.Meta["writ/error_code"] != string(protocol.CodeAwaitingApproval) || !strings.Contains(text(r), "writ_intent_status") {
		t.Fatalf("approval wait over: isError %v %q %v", r.IsError, text(r), r.Meta)
	}
	s := call(t, c, "writ_intent_status", map[string]any{"intent_id": id}, nil)
	if s.IsError || s.Meta["writ/state"] != "pending_approval" || !strings.Contains(text(s), "awaits approval") {
		t.Fatalf("status while pending: %v %q %v", s.IsError, text(s), s.Meta)
	}
	d.decide(t, id, "echo_approval", `{"msg":"later"}`, protocol.DecisionApprove)
	eventually.Within(t, 30*time.Second, "the approved intent to complete", func() bool {
		s = call(t, c, "writ_intent_status", map[string]any{"intent_id": id}, nil)
		return s.Meta["writ/state"] == "completed"
	})
	if s.IsError || text(s) != `{"msg":"later"}` || s.Meta["writ/receipt_index"] == nil {
		t.Fatalf("status once approved: %v %q %v", s.IsError, text(s), s.Meta)
	}
	if s := call(t, c, "writ_intent_status", map[string]any{"intent_id": "int-nosuch"}, nil); !s.IsError || s.Meta["writ/error_code"] != "not_found" {
		t.Errorf("status of no intent: %v %q %v", s.IsError, text(s), s.Meta)
	}

	// A cancelled call stops waiting; the session goes on.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "echo_approval", Arguments: map[string]any{"msg": "cancel"}, Meta: mcp.Meta{"progressToken": "c"}})
		errc <- err
	}()
	var cancelled string
	select {
	case p := <-c.progress:
		cancelled, _ = p.Meta["writ/intent_id"].(string)
	case <-time.After(30 * time.Second):
		t.Fatal("no progress for the call to cancel")
	}
	cancel()
	if err := <-errc; err == nil {
		t.Error("a cancelled call returned no error")
	}
	checkEcho(t, d, call(t, c, "echo", map[string]any{"msg": "after"}, nil), "after")
	// With a client that can cancel intents, writ mcp cancels the intent
	// of the cancelled call (it had not started); without, it is left
	// awaiting approval.
	want := "pending_approval"
	if _, ok := any(client.New(d.server, "")).(interface {
		CancelIntent(context.Context, string) (*client.IntentResponse, error)
	}); ok {
		want = "canceled"
	}
	var state any
	eventually.NoError(t, "the intent of a cancelled call to be "+want, func() error {
		state = call(t, c, "writ_intent_status", map[string]any{"intent_id": cancelled}, nil).Meta["writ/state"]
		if state != want {
			return fmt.Errorf("the intent %s is %v", cancelled, state)
		}
		return nil
	})
}

// TestMCPHTTP drives writ mcp --http with the Go SDK's client; checks that
// a request without the token, with another token or from a foreign origin
// is refused; and that a request sent again with the same id in the same
// session is answered with the first intent, not run twice.
func TestMCPHTTP(t *testing.T) {
	t.Parallel()
	d := startMCPDev(t)
	url, token := httpMCP(t, d)
	c := newMCPClient(t, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}}, "")
	exerciseMCP(t, d, c)

	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	post := func(body string, header map[string]string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, c := range []struct {
		name   string
		header map[string]string
		status int
		code   string
	}{
		{"no token", nil, 401, "unauthorized"},
		{"another token", map[string]string{"Authorization": "Bearer " + strings.Repeat("x", len(token))}, 401, "unauthorized"},
		{"token without Bearer", map[string]string{"Authorization": token}, 401, "unauthorized"},
		{"foreign origin", map[string]string{"Authorization": "Bearer " + token, "Origin": "http://evil.example"}, 403, "forbidden_origin"},
	} {
		resp, body := post(initialize, c.header)
		if resp.StatusCode != c.status || !strings.Contains(body, `"code":"`+c.code+`"`) {
			t.Errorf("%s: %d %s, want %d %s", c.name, resp.StatusCode, body, c.status, c.code)
		}
	}

	auth := map[string]string{"Authorization": "Bearer " + token}
	resp, body := post(initialize, auth)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || session == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	auth["Mcp-Session-Id"], auth["MCP-Protocol-Version"] = session, "2025-11-25"
	if resp, body := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, auth); resp.StatusCode != 202 {
		t.Fatalf("initialized: %d %s", resp.StatusCode, body)
	}
	callOnce := func(id int, msg string) (string, string) {
		t.Helper()
		resp, body := post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"msg":%q},"_meta":{"writ/request-id":"spoofed"}}}`, id, msg), auth)
		// The answer is JSON, or one server-sent event holding it.
		if i := strings.Index(body, "data: "); i >= 0 {
			body = strings.TrimSpace(strings.SplitN(body[i+len("data: "):], "\n", 2)[0])
		}
		var r struct {
			Result mcp.CallToolResult `json:"result"`
		}
		if resp.StatusCode != 200 || jsonx.UnmarshalLenient([]byte(body), &r) != nil || r.Result.IsError {
			t.Fatalf("tools/call id %d: %d %s", id, resp.StatusCode, body)
		}
		id2, _ := r.Result.Meta["writ/intent_id"].(string)
		return id2, text(&r.Result)
	}
	a, out := callOnce(7, "once")
	b, out2 := callOnce(7, "once")
	other, _ := callOnce(8, "once")
	if a == "" || a != b || out != `{"msg":"once"}` || out2 != out {
		t.Errorf("request 7 sent twice: intents %q and %q, outputs %q and %q; want one intent", a, b, out, out2)
	}
	if other == a {
		t.Errorf("request 8 was answered with request 7's intent %s", a)
	}
}

// TestMCPTypeScript: the official TypeScript SDK's client (npm
// @modelcontextprotocol/sdk, which make deps installs into .npm-mcp/) lists
// and calls through writ mcp over stdio. Without node or the package the
// test fails under CI=true and is skipped otherwise.
func TestMCPTypeScript(t *testing.T) {
	t.Parallel()
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed: make deps installs the Debian package nodejs")
	}
	modules, err := filepath.Abs("../../.npm-mcp/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(modules, "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		missing("the TypeScript MCP SDK is not in %s: make deps installs it", modules)
	}
	d := startMCPDev(t)
	cmd := exec.Command(node, "testdata/mcp_client.cjs", writBin, "--dev", d.dir)
	cmd.Env = append(withoutWritEnv(), "NODE_PATH="+modules)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client: %v\n%s", err, out)
	}
	var got struct {
		Server struct{ Name string }
		Tools  []string
		Result mcp.CallToolResult
	}
	if err := jsonx.UnmarshalLenient(out, &got); err != nil {
		t.Fatalf("the TypeScript client printed %q: %v", out, err)
	}
	if got.Server.Name != "writ" || !strings.Contains(strings.Join(got.Tools, ","), "echo,echo_approval") {
		t.Errorf("server %+v, tools %v", got.Server, got.Tools)
	}
	checkEcho(t, d, &got.Result, "from typescript")

	// The TypeScript snippet of docs/agents.md, as written there.
	snippet := docSnippet(t, "../../docs/agents.md", "### TypeScript", "```js")
	for _, path := range []string{"/home/me/writ/bin/writ", "/home/me/writ/.dev"} {
		if !strings.Contains(snippet, `"`+path+`"`) {
			t.Fatalf("the TypeScript snippet of docs/agents.md does not name %s", path)
		}
	}
	snippet = strings.NewReplacer(`"/home/me/writ/bin/writ"`, strconv.Quote(writBin), `"/home/me/writ/.dev"`, strconv.Quote(d.dir)).Replace(snippet)
	script := writeFile(t, t.TempDir(), "snippet.cjs", "(async () => {\n"+snippet+
		"console.log(JSON.stringify({ tools: tools.map((t) => t.name).sort(), result }));\nawait client.close();\n"+
		"})().catch((err) => { console.error(err); process.exit(1); });\n")
	cmd = exec.Command(node, script)
	cmd.Env = append(withoutWritEnv(), "NODE_PATH="+modules)
	cmd.Stderr = os.Stderr
	if out, err = cmd.Output(); err != nil {
		t.Fatalf("the snippet of docs/agents.md: %v\n%s", err, out)
	}
	got.Tools, got.Result = nil, mcp.CallToolResult{}
	if err := jsonx.UnmarshalLenient(out, &got); err != nil {
		t.Fatalf("the snippet of docs/agents.md printed %q: %v", out, err)
	}
	if !strings.Contains(strings.Join(got.Tools, ","), "echo,echo_approval") {
		t.Errorf("the snippet listed %v", got.Tools)
	}
	checkEcho(t, d, &got.Result, "hello")
}

// docSnippet is the code block that opens with fence after the line
// heading in the Markdown file path, without its fences.
func docSnippet(t *testing.T, path, heading, fence string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n"+heading+"")
	if ok {
		_, after, ok = strings.Cut(after, "\n"+fence+"\n")
	}
	var code string
	if ok {
		code, _, ok = strings.Cut(after, "\n```")
	}
	if !ok {
		t.Fatalf("%s has no %s block under %q", path, fence, heading)
	}
	return code + "\n"
}

// TestMCPFlags: writ mcp refuses what it cannot serve safely, before it
// reaches any server: --http on an address that is not loopback, a token
// file others can read, a token too short, missing identity flags.
func TestMCPFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := writeFile(t, dir, "orch.key", base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))+"\n")
	os.Chmod(key, 0o600)
	short := writeFile(t, dir, "short.token", "abc\n")
	os.Chmod(short, 0o600)
	open := writeFile(t, dir, "open.token", strings.Repeat("t", 40)+"\n")
	os.Chmod(open, 0o644)
	id := []string{"mcp", "--server", "http://127.0.0.1:1", "--key", "orch=" + key, "--tenant", "t", "--principal", "p"}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"not loopback", append(id, "--http", "0.0.0.0:0", "--http-token-file", filepath.Join(dir, "new.token")), "loopback address only"},
		{"token too short", append(id, "--http", "127.0.0.1:0", "--http-token-file", short), "at least 32 characters"},
		{"token file open", append(id, "--http", "127.0.0.1:0", "--http-token-file", open), "too open"},
		{"no token file", append(id, "--http", "127.0.0.1:0"), "--http-token-file"},
		{"no principal", []string{"mcp", "--key", "orch=" + key, "--tenant", "t"}, "--principal"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(writBin, c.args...)
			cmd.Env = withoutWritEnv()
			out, err := cmd.CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
				t.Fatalf("writ %v: %v %s, want exit 2 and %q", c.args, err, out, c.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "new.token")); err == nil {
				t.Fatal("a refused writ mcp wrote a token file")
			}
		})
	}
}
