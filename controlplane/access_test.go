package controlplane_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gorilla/websocket"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// probe is the request TestAccessMatrix sends to a route. {intent},
// {receipt} and {node} in path name an intent of the tenant, its receipt's
// index and the enrolled node. status is what a caller the route serves
// (yes) gets, or what the body's verdict is (by body). ws dials a WebSocket.
type probe struct {
	method, path, body string
	status             int
	// signedIn is the status a caller with a session gets, when not status.
	signedIn int
	ws       bool
	// ends says the probe ends the caller's dashboard session.
	ends bool
}

// probes has one request for every route, by pattern. The requests change
// nothing: ids that do not exist, bodies the handler refuses after
// authorizing them.
var probes = map[string]probe{
	"POST /v1/intents":                                  {method: "POST", path: "/v1/intents", body: `{}`, status: 400},
	"GET /v1/intents":                                   {method: "GET", path: "/v1/intents?limit=5", status: 200},
	"GET /v1/intents/{id}":                              {method: "GET", path: "/v1/intents/{intent}", status: 200},
	"GET /v1/intents/{id}/output":                       {method: "GET", path: "/v1/intents/{intent}/output", status: 200},
	"POST /v1/intents/{id}/cancel":                      {method: "POST", path: "/v1/intents/{intent}/cancel", status: 200},
	"POST /v1/tenants/{tenant}/runs/{run}/cancel":       {method: "POST", path: "/v1/tenants/{tenant}/runs/no-such-run/cancel", status: 200},
	"POST /v1/approvals":                                {method: "POST", path: "/v1/approvals", body: `{}`, status: 400},
	"GET /v1/events":                                    {method: "GET", path: "/v1/events", ws: true},
	"GET /{$}":                                          {method: "GET", path: "/", status: 303},
	"POST /v1/admin/tokens":                             {method: "POST", path: "/v1/admin/tokens", body: `{"role":"root"}`, status: 400},
	"DELETE /v1/admin/tokens/{id}":                      {method: "DELETE", path: "/v1/admin/tokens/0123456789abcdef", status: 404},
	"GET /v1/tools":                                     {method: "GET", path: "/v1/tools", status: 200},
	"GET /v1/health":                                    {method: "GET", path: "/v1/health", status: 200},
	"GET /v1/version":                                   {method: "GET", path: "/v1/version", status: 200},
	"GET /v1/admin/tokens":                              {method: "GET", path: "/v1/admin/tokens", status: 200},
	"GET /v1/admin/sessions":                            {method: "GET", path: "/v1/admin/sessions", status: 200},
	"DELETE /v1/admin/sessions/{id}":                    {method: "DELETE", path: "/v1/admin/sessions/0123456789abcdef", status: 404},
	"GET /metrics":                                      {method: "GET", path: "/metrics", status: 200},
	"PUT /v1/admin/tenants/{tenant}":                    {method: "PUT", path: "/v1/admin/tenants/acme", body: `{"run_budget":"x"}`, status: 400},
	"PUT /v1/admin/tenants/{tenant}/keys/{key}":         {method: "PUT", path: "/v1/admin/tenants/acme/keys/k", body: `{"secret":1}`, status: 400},
	"DELETE /v1/admin/tenants/{tenant}/keys/{key}":      {method: "DELETE", path: "/v1/admin/tenants/acme/keys/none", status: 200},
	"PUT /v1/admin/tenants/{tenant}/approvers/{key}":    {method: "PUT", path: "/v1/admin/tenants/acme/approvers/k", body: `{"x":1}`, status: 400},
	"DELETE /v1/admin/tenants/{tenant}/approvers/{key}": {method: "DELETE", path: "/v1/admin/tenants/acme/approvers/none", status: 200},
	"PUT /v1/admin/tools":                               {method: "PUT", path: "/v1/admin/tools", body: `{"x":1}`, status: 400},
	"PUT /v1/admin/policy":                              {method: "PUT", path: "/v1/admin/policy", body: `{"x":1}`, status: 400},
	"GET /v1/admin/policy":                              {method: "GET", path: "/v1/admin/policy", status: 200},
	"GET /v1/admin/webhooks":                            {method: "GET", path: "/v1/admin/webhooks", status: 200},
	"GET /v1/admin/policy/versions":                     {method: "GET", path: "/v1/admin/policy/versions", status: 200},
	"POST /v1/admin/policy/rollback":                    {method: "POST", path: "/v1/admin/policy/rollback", body: `{"version":999999}`, status: 404},
	"POST /v1/admin/policy/dry-run":                     {method: "POST", path: "/v1/admin/policy/dry-run", body: `{"text":"x"}`, status: 400},
	"POST /v1/admin/locks":                              {method: "POST", path: "/v1/admin/locks", body: `{"reason":"r"}`, status: 400},
	"GET /v1/admin/locks":                               {method: "GET", path: "/v1/admin/locks", status: 200},
	"DELETE /v1/admin/locks/{id}":                       {method: "DELETE", path: "/v1/admin/locks/lck-none", status: 404},
	"GET /v1/receipts/{index}":                          {method: "GET", path: "/v1/receipts/{receipt}", status: 200},
	"GET /v1/ledger/checkpoint":                         {method: "GET", path: "/v1/ledger/checkpoint", status: 200},
	"GET /v1/ledger/consistency":                        {method: "GET", path: "/v1/ledger/consistency?from=1&to=2", status: 200},
	"GET /v1/ledger/admin":                              {method: "GET", path: "/v1/ledger/admin?limit=5", status: 200},
	"POST /v1/admin/join-tokens":                        {method: "POST", path: "/v1/admin/join-tokens", body: `{"x":1}`, status: 400},
	"GET /v1/enroll/ca":                                 {method: "GET", path: "/v1/enroll/ca", status: 200},
	"POST /v1/enroll":                                   {method: "POST", path: "/v1/enroll", body: `{"token":"wj1.a.b.c"}`, status: 401},
	"GET /v1/nodes":                                     {method: "GET", path: "/v1/nodes", status: 200},
	"GET /v1/nodes/{id}":                                {method: "GET", path: "/v1/nodes/{node}", status: 200},
	"POST /v1/admin/nodes/{id}/{action}":                {method: "POST", path: "/v1/admin/nodes/{node}/nope", status: 404},
	"POST /v1/internal/apply":                           {method: "POST", path: "/v1/internal/apply", body: `{}`},
	"POST /v1/internal/submit-batch":                    {method: "POST", path: "/v1/internal/submit-batch", body: `{}`},
	"GET /v1/internal/heartbeats":                       {method: "GET", path: "/v1/internal/heartbeats"},
	"/":                                                 {method: "GET", path: "/v1/nope"},
	"GET /ui/static/":                                   {method: "GET", path: "/ui/static/style.css", status: 200},
	"GET /ui/signin":                                    {method: "GET", path: "/ui/signin", status: 200, signedIn: 303},
	"POST /ui/signin":                                   {method: "POST", path: "/ui/signin", body: "token=wu1.nope", status: 401},
	"POST /ui/signout":                                  {method: "POST", path: "/ui/signout", status: 303, ends: true},
	"GET /ui/{$}":                                       {method: "GET", path: "/ui/", status: 200},
	"GET /ui/fleet":                                     {method: "GET", path: "/ui/fleet", status: 200},
	"GET /ui/fleet/{id}":                                {method: "GET", path: "/ui/fleet/{node}", status: 200},
	"POST /ui/fleet/{id}/{action}":                      {method: "POST", path: "/ui/fleet/{node}/nope", status: 404},
	"GET /ui/approvals":                                 {method: "GET", path: "/ui/approvals", status: 200},
	"GET /ui/intents":                                   {method: "GET", path: "/ui/intents?tenant={tenant}", status: 200},
	"GET /ui/intents/{id}":                              {method: "GET", path: "/ui/intents/{intent}", status: 200},
	"GET /ui/ledger":                                    {method: "GET", path: "/ui/ledger", status: 200},
	"GET /ui/audit":                                     {method: "GET", path: "/ui/audit", status: 200},
	"POST /ui/locks":                                    {method: "POST", path: "/ui/locks", body: `{}`, status: 400},
	"POST /ui/locks/{id}/delete":                        {method: "POST", path: "/ui/locks/lck-none/delete", status: 404},
	"/ui/":                                              {method: "GET", path: "/ui/nope"},
}

// accessWorld is a dev server with objects of its tenant and a credential of
// every kind.
type accessWorld struct {
	d                   *devServer
	base                string
	intent, receipt     string
	tenantKey, otherKey []byte
	tokens              map[string]string       // the bearer token of a kind
	sessions            map[string]*http.Cookie // a kind's dashboard session
}

func newAccessWorld(t *testing.T) *accessWorld {
	// Every refused request of the walk counts as a failed authentication
	// from 127.0.0.1: let the walk make many.
	d := startDevWith(t, func(c *controlplane.Config) { c.FailureBurst, c.FailuresPerSecond = 1<<20, 1<<20 })
	ctx := context.Background()
	w := &accessWorld{d: d, base: "http://" + d.s.Addr().String(), tokens: map[string]string{}, sessions: map[string]*http.Cookie{}}
	w.tenantKey, _ = base64.StdEncoding.DecodeString(d.creds.Orchestrator.Secret)
	w.otherKey = []byte("globex's orchestrator key, 32 b.")
	if err := d.admin.Admin(ctx, "PUT", "tenants/globex/keys/g1", []byte(fmt.Sprintf(`{"secret":%q}`, base64.StdEncoding.EncodeToString(w.otherKey)))); err != nil {
		t.Fatal(err)
	}
	// A completed intent of the tenant, and a denied one whose receipt
	// carries no tool output.
	done := d.intent(t, "echo", `{"msg":"secret of dev"}`)
	if r, err := d.c.Submit(ctx, done, nil, 10*time.Second); err != nil || r.State != "completed" {
		t.Fatalf("submit: %+v %v", r, err)
	}
	in, _ := protocol.DecodeIntent(done, 0)
	w.intent = in.ID
	denied := d.intent(t, "echo_approval", `{}`)
	r, err := d.c.Submit(ctx, denied, d.approval(t, denied, "deny"), 10*time.Second)
	if err != nil || r.ReceiptIndex == nil || r.Checkpoint == "" {
		t.Fatalf("denied: %+v %v", r, err)
	}
	w.receipt = fmt.Sprint(*r.ReceiptIndex)
	for kind, req := range map[string]string{
		controlplane.KindViewer:       `{"role":"viewer","tenant":"` + d.creds.Tenant + `"}`,
		controlplane.KindViewerOther:  `{"role":"viewer","tenant":"globex"}`,
		controlplane.KindApprover:     `{"role":"approver","tenant":"` + d.creds.Tenant + `","approver":"` + d.creds.Approver.Approver + `"}`,
		controlplane.KindAuditor:      `{"role":"auditor","tenant":"` + d.creds.Tenant + `"}`,
		controlplane.KindAuditorOther: `{"role":"auditor","tenant":"globex","outputs":true}`,
	} {
		var tok struct{ Token string }
		if err := d.admin.AdminJSON(ctx, "POST", "tokens", []byte(req), &tok); err != nil {
			t.Fatal(err)
		}
		w.tokens[kind] = tok.Token
	}
	w.tokens[controlplane.KindAdmin] = d.creds.AdminToken
	return w
}

// session signs in with kind's token, once until a probe ends the session.
func (w *accessWorld) session(t *testing.T, kind string) *http.Cookie {
	if c, ok := w.sessions[kind]; ok {
		return c
	}
	req, _ := http.NewRequest("POST", w.base+"/ui/signin", strings.NewReader(url.Values{"token": {w.tokens[kind]}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", w.base)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) == 0 {
		t.Fatalf("%s does not sign in: %d", kind, resp.StatusCode)
	}
	w.sessions[kind] = resp.Cookies()[0]
	return w.sessions[kind]
}

// credentials adds what a caller of kind sends to h: a signed read, a
// bearer token, or a session cookie with its CSRF token, from this origin.
func (w *accessWorld) credentials(t *testing.T, kind, method, target string, h http.Header) {
	sign := func(tenant, keyID string, secret []byte) {
		at := protocol.ReadTime(time.Now())
		h.Set(protocol.HeaderTenant, tenant)
		h.Set(protocol.HeaderKeyID, keyID)
		h.Set(protocol.HeaderTime, at)
		h.Set(protocol.HeaderSignature, protocol.SignRead(secret, method, target, tenant, keyID, at))
	}
	cookie := func(c *http.Cookie) {
		h.Add("Cookie", c.String())
		h.Set("Origin", w.base)
		m := hmac.New(sha256.New, []byte(c.Value))
		m.Write([]byte("writ dashboard csrf"))
		h.Set("X-CSRF-Token", base64.RawURLEncoding.EncodeToString(m.Sum(nil)))
	}
	switch kind {
	case controlplane.KindNone:
	case controlplane.KindOtherTenant:
		sign("globex", "g1", w.otherKey)
	case controlplane.KindTenant:
		sign(w.d.creds.Tenant, w.d.creds.Orchestrator.KeyID, w.tenantKey)
	case controlplane.KindViewer, controlplane.KindViewerOther, controlplane.KindApprover:
		cookie(w.session(t, kind))
	case controlplane.KindAuditor, controlplane.KindAuditorOther:
		h.Set("Authorization", "Bearer "+w.tokens[kind])
	case controlplane.KindAdmin:
		h.Set("Authorization", "Bearer "+w.tokens[kind])
		cookie(w.session(t, kind))
	default:
		t.Fatalf("no credentials for kind %q", kind)
	}
}

// answer is what a probe got: the status, where it redirects, the body.
type answer struct {
	status   int
	location string
	body     []byte
}

func (w *accessWorld) send(t *testing.T, kind string, p probe) answer {
	target := strings.NewReplacer("{intent}", url.PathEscape(w.intent), "{receipt}", w.receipt,
		"{node}", w.d.node.ID, "{tenant}", w.d.creds.Tenant).Replace(p.path)
	h := http.Header{}
	w.credentials(t, kind, p.method, target, h)
	if p.ws {
		conn, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(w.base, "http")+target, h)
		if err == nil {
			conn.Close()
		}
		if resp == nil {
			t.Fatalf("%s %s: %v", p.method, target, err)
		}
		return answer{status: resp.StatusCode}
	}
	var rd io.Reader
	if p.body != "" {
		rd = strings.NewReader(p.body)
	}
	req, _ := http.NewRequest(p.method, w.base+target, rd)
	for k, v := range h {
		req.Header[k] = v
	}
	if strings.HasPrefix(p.body, "token=") {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else if p.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, location: resp.Header.Get("Location"), body: b}
}

// check says how an answer differs from what the matrix grants, or "".
func check(a answer, want controlplane.Access, p probe, pattern string, signedIn bool) string {
	code := func() string {
		var e protocol.ErrorResponse
		jsonx.UnmarshalLenient(a.body, &e)
		return string(e.Error.Code)
	}
	switch want {
	case controlplane.AccessYes, controlplane.AccessBody:
		status := p.status
		if p.ws {
			status = http.StatusSwitchingProtocols
		}
		if a.status != status && !(a.status == p.signedIn && signedIn) {
			return fmt.Sprintf("status %d, want %d", a.status, status)
		}
		if pattern == "GET /v1/receipts/{index}" && !strings.Contains(string(a.body), `"receipt":{`) {
			return "no receipt in the answer"
		}
	case controlplane.AccessNo:
		signIn := a.status == http.StatusSeeOther && strings.HasPrefix(a.location, "/ui/signin")
		if a.status != http.StatusUnauthorized && a.status != http.StatusForbidden && !signIn {
			return fmt.Sprintf("status %d (%s), want it refused", a.status, code())
		}
	case controlplane.AccessHidden:
		// A page is not found as a page, in HTML.
		page := strings.HasPrefix(pattern, "GET /ui/") && strings.HasPrefix(string(a.body), "<!doctype html>")
		if a.status != http.StatusNotFound || (code() != "not_found" && !page) {
			return fmt.Sprintf("status %d (%s), want not_found", a.status, code())
		}
	case controlplane.AccessHash:
		var m map[string]jsontext.Value
		if a.status != 200 || jsonx.UnmarshalLenient(a.body, &m) != nil {
			return fmt.Sprintf("status %d, want the leaf hash", a.status)
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		})
		if !slices.Equal(keys, []string{"checkpoint", "index", "leaf_hash", "proof"}) {
			return fmt.Sprintf("members %v, want only the leaf hash, proof and checkpoint", keys)
		}
	default:
		return fmt.Sprintf("the matrix says %q, which the test does not know", want)
	}
	return ""
}

// TestAccessMatrix walks every route the server registers with every kind
// of caller, and checks each answer against the access matrix. A route with
// no row in the matrix, or a row with no route, fails.
func TestAccessMatrix(t *testing.T) {
	t.Parallel()
	w := newAccessWorld(t)
	matrix := map[string]controlplane.RouteAccess{}
	for _, r := range controlplane.AccessMatrix() {
		if len(r.Access) != len(controlplane.AccessKinds) {
			t.Errorf("%s: %d cells for %d kinds", r.Pattern, len(r.Access), len(controlplane.AccessKinds))
		}
		matrix[r.Pattern] = r
	}
	routes := controlplane.RoutePatterns(w.d.s)
	for _, pattern := range routes {
		if _, ok := matrix[pattern]; !ok {
			t.Errorf("route %q is not in the access matrix (controlplane/access.go)", pattern)
		}
		if _, ok := probes[pattern]; !ok {
			t.Errorf("route %q has no probe in TestAccessMatrix", pattern)
		}
	}
	for pattern := range matrix {
		if !slices.Contains(routes, pattern) {
			t.Errorf("the access matrix names %q, which no one registers", pattern)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, pattern := range routes {
		r, p := matrix[pattern], probes[pattern]
		for i, kind := range controlplane.AccessKinds {
			a := w.send(t, kind, p)
			_, signedIn := w.sessions[kind]
			if msg := check(a, r.Access[i], p, pattern, signedIn); msg != "" {
				t.Errorf("%s, %s (matrix: %s): %s: %.200s", pattern, kind, r.Access[i], msg, a.body)
			}
		}
		if p.ends {
			clear(w.sessions)
		}
	}
}

// TestAccessDocs: docs/controlplane.md carries the matrix exactly as
// AccessTable renders it.
func TestAccessDocs(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/controlplane.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), controlplane.AccessTable()) {
		t.Fatalf("docs/controlplane.md does not carry the access matrix as it is; its Access section should read:\n\n%s", controlplane.AccessTable())
	}
}

// get sends a GET with kind's credentials and returns the status and body.
func (w *accessWorld) get(t *testing.T, kind, path string) (int, string) {
	a := w.send(t, kind, probe{method: "GET", path: path})
	return a.status, string(a.body)
}

// TestNoContentWithoutEntitlement: params and output of a tenant's intent
// reach no one the matrix does not entitle: not the public receipt, the
// event stream of a viewer of another tenant or of the admin (events carry
// summaries), metrics, the tool catalog, nor another tenant's overview; no
// receipt carries them (result v2), and the output route serves the output
// only to the tenant, the admin and an auditor granted outputs.
func TestNoContentWithoutEntitlement(t *testing.T) {
	t.Parallel()
	w := newAccessWorld(t)
	ctx := context.Background()
	const marker = "c0nfidential-marker"
	// Events from now on, as the admin and as a viewer of globex see them.
	dial := func(kind string) *websocket.Conn {
		h := http.Header{}
		w.credentials(t, kind, "GET", "/v1/events", h)
		conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(w.base, "http")+"/v1/events", h)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	adminEvents, otherEvents := dial(controlplane.KindAdmin), dial(controlplane.KindViewerOther)
	raw := w.d.intent(t, "echo", `{"msg":"`+marker+`"}`)
	r, err := w.d.c.Submit(ctx, raw, nil, 10*time.Second)
	if err != nil || r.State != "completed" || r.ReceiptIndex == nil || r.Checkpoint == "" {
		t.Fatalf("submit: %+v %v", r, err)
	}
	if strings.Contains(string(r.Receipt), marker) {
		t.Fatal("the receipt carries the output (a writ.result/v2 commits to it by hash only)")
	}
	pending := w.d.intent(t, "echo_approval", `{"msg":"`+marker+`"}`)
	if _, err := w.d.c.Submit(ctx, pending, nil, 0); err != nil {
		t.Fatal(err)
	}
	receipt := fmt.Sprintf("/v1/receipts/%d", *r.ReceiptIndex)
	output := "/v1/intents/" + r.IntentID + "/output"
	for _, c := range []struct{ kind, path string }{
		{controlplane.KindNone, receipt},
		{controlplane.KindViewerOther, receipt},
		{controlplane.KindAuditor, receipt},
		{controlplane.KindTenant, receipt},
		{controlplane.KindAdmin, receipt},
		{controlplane.KindNone, "/metrics"},
		{controlplane.KindNone, "/v1/tools"},
		{controlplane.KindNone, "/v1/health"},
		{controlplane.KindViewerOther, "/ui/"},
		{controlplane.KindViewerOther, "/ui/approvals"},
		{controlplane.KindViewerOther, "/ui/intents"},
	} {
		status, body := w.get(t, c.kind, c.path)
		if status != 200 || strings.Contains(body, marker) {
			t.Errorf("%s, %s: status %d, output or params in the answer: %v", c.path, c.kind, status, strings.Contains(body, marker))
		}
	}
	// The output route: those entitled get it, the others nothing of it.
	for _, kind := range []string{controlplane.KindTenant, controlplane.KindAdmin} {
		if status, body := w.get(t, kind, output); status != 200 || !strings.Contains(body, marker) {
			t.Errorf("%s, %s: status %d, want the output", output, kind, status)
		}
	}
	for _, kind := range []string{controlplane.KindNone, controlplane.KindOtherTenant, controlplane.KindViewer, controlplane.KindAuditor, controlplane.KindAuditorOther} {
		if status, body := w.get(t, kind, output); status == 200 || strings.Contains(body, marker) {
			t.Errorf("%s, %s: status %d, the output reached a caller not entitled to it", output, kind, status)
		}
	}
	ctxT, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var tok struct{ Token string }
	if err := w.d.admin.AdminJSON(ctxT, "POST", "tokens", []byte(`{"role":"auditor","outputs":true}`), &tok); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", w.base+output, nil)
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), marker) {
		t.Errorf("an auditor of every tenant with outputs: %d %.200s", resp.StatusCode, b)
	}
	// The overview of a viewer of globex counts none of dev's pending
	// intents; dev's viewer counts its own.
	if _, body := w.get(t, controlplane.KindViewerOther, "/ui/"); !strings.Contains(body, "0 waiting for approval in tenant globex") {
		t.Errorf("globex's overview: %.300s", body[strings.Index(body, "h-agents"):])
	}
	if _, body := w.get(t, controlplane.KindViewer, "/ui/"); !strings.Contains(body, "1 waiting for approval in tenant "+w.d.creds.Tenant) {
		t.Errorf("dev's overview does not count its pending intent")
	}
	// Events: the admin sees the intents' summaries, never their content;
	// globex's viewer sees no intent of dev.
	in, _ := protocol.DecodeIntent(raw, 0)
	read := func(conn *websocket.Conn, until func(ev map[string]any) bool) []string {
		var seen []string
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
			conn.SetReadDeadline(deadline)
			_, b, err := conn.ReadMessage()
			if err != nil {
				break
			}
			seen = append(seen, string(b))
			var ev map[string]any
			jsonx.UnmarshalLenient(b, &ev)
			if until(ev) {
				break
			}
		}
		return seen
	}
	events := read(adminEvents, func(ev map[string]any) bool {
		i, _ := ev["intent"].(map[string]any)
		return ev["id"] == in.ID && i != nil && i["State"] == "completed"
	})
	if !strings.Contains(strings.Join(events, "\n"), in.ID) {
		t.Fatalf("the admin saw no event of %s: %q", in.ID, events)
	}
	for _, ev := range events {
		if strings.Contains(ev, marker) {
			t.Errorf("an event carries params or output: %s", ev)
		}
	}
	for _, ev := range read(otherEvents, func(map[string]any) bool { return false }) {
		if strings.Contains(ev, `"tenant":"`+w.d.creds.Tenant+`"`) {
			t.Errorf("a viewer of globex got an event of tenant %s: %s", w.d.creds.Tenant, ev)
		}
	}
}
