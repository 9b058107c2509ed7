package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// devDashboard is `writ dev` with dashboard tokens for each role.
type devDashboard struct {
	dir, server, devJSON string
	creds                struct {
		Tenant       string `json:"tenant"`
		AdminToken   string `json:"admin_token"`
		LedgerKey    string `json:"ledger_key"`
		Orchestrator struct {
			KeyID string `json:"key_id"`
		} `json:"orchestrator"`
	}
	viewer, approver string
}

func startDevDashboard(t *testing.T) *devDashboard {
	t.Helper()
	d := &devDashboard{dir: t.TempDir()}
	addr, raftAddr := freePort(t), freePort(t)
	d.server = "http://" + addr
	dev := startWritDev(t, d.dir, addr, raftAddr)
	t.Cleanup(func() { stopWritDev(t, dev) })
	d.devJSON = filepath.Join(d.dir, "dev.json")
	b, err := os.ReadFile(d.devJSON)
	if err != nil || json.Unmarshal(b, &d.creds) != nil {
		t.Fatalf("dev.json: %v", err)
	}
	token := func(args ...string) string {
		out, code := run(t, "", append([]string{"token", "create", "-o", "text", "--server", d.server, "--token", d.creds.AdminToken}, args...)...)
		if code != 0 || !strings.HasPrefix(out, "wu1.") {
			t.Fatalf("token create %v: %q exit %d", args, out, code)
		}
		return strings.TrimSpace(out)
	}
	d.viewer = token("--role", "viewer")
	d.approver = token("--role", "approver", "--tenant", d.creds.Tenant, "--approver", "dev-approver")
	return d
}

// submit signs an intent with the dev orchestrator key and submits it
// through the API, returning its id.
func (d *devDashboard) submit(t *testing.T, tool, params string) string {
	t.Helper()
	intent, code := run(t, "", "intent", "sign", "--key", d.creds.Orchestrator.KeyID+"="+filepath.Join(d.dir, "orchestrator.key"),
		"--tenant", d.creds.Tenant, "--principal", "support-bot", "--run", "run-1", "--tool", tool, "--params", params)
	if code != 0 {
		t.Fatalf("intent sign: exit %d", code)
	}
	out, code := run(t, intent, "intent", "submit", "--server", d.server)
	var r struct {
		IntentID string `json:"intent_id"`
		State    string `json:"state"`
	}
	if json.Unmarshal([]byte(out), &r) != nil || code != exitFor(r.State, false) {
		t.Fatalf("intent submit: %q exit %d", out, code)
	}
	return r.IntentID
}

func (b *browser) signIn(server, token string) {
	b.t.Helper()
	// By keyboard: the token field, typed, and Enter.
	b.run("sign in", chromedp.Navigate(server+"/ui/signin"), chromedp.Focus("#token", chromedp.ByQuery),
		chromedp.SendKeys("#token", token, chromedp.ByQuery), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible("#signout", chromedp.ByQuery))
}

func (b *browser) signOut() {
	b.t.Helper()
	b.run("sign out", chromedp.Click("#signout", chromedp.ByQuery), chromedp.WaitVisible("#token", chromedp.ByQuery))
}

// post sends a request from the page, as its own script would, and returns
// the status and the error code.
func (b *browser) post(path, body string, csrf bool) (int, string) {
	b.t.Helper()
	headers := `{"Content-Type": "application/json"}`
	if csrf {
		headers = `{"Content-Type": "application/json", "X-CSRF-Token": document.body.dataset.csrf}`
	}
	var r struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	}
	b.eval("POST "+path, fmt.Sprintf(`fetch(%q, {method: "POST", body: %s, credentials: "same-origin", headers: %s})
		.then(async r => ({status: r.status, code: ((await r.json().catch(() => ({}))).error || {}).code || ""}))`, path, body, headers), &r)
	return r.Status, r.Code
}

// TestDashboardInChromium drives the dashboard of one `writ dev` in one
// headless Chromium: the shared vectors in the browser's own code, sign-in,
// the fleet, an intent arriving in the approval queue without a reload,
// approving it with a key held in the browser, the intent completing, its
// receipt verified in the browser, a replayed approval, a request without the
// CSRF token, and a viewer who is not offered approval and is refused.
func TestDashboardInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short: a browser")
	}
	b := startBrowser(t)
	d := startDevDashboard(t)
	start := time.Now()

	// The browser's canonical JSON, hashes, signatures and ledger checks
	// against the protocol's vectors.
	vectors := map[string]json.RawMessage{}
	for _, name := range []string{"payload_hash", "intent", "approval", "ledger"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "vectors", name+".json"))
		if err != nil {
			t.Fatalf("the shared vectors: %v", err)
		}
		vectors[name] = raw
	}
	all, _ := json.Marshal(vectors)
	b.run("open the sign-in page", chromedp.Navigate(d.server+"/ui/signin"), chromedp.WaitVisible("#token", chromedp.ByQuery))
	b.checkAccessible("sign-in")
	b.shoot("signin")
	var self struct {
		Passed int `json:"passed"`
		Failed []struct {
			Name, Detail string
		} `json:"failed"`
	}
	b.eval("vectors", `import("/ui/static/selftest.js").then(m => m.run(`+string(all)+`))`, &self)
	if len(self.Failed) > 0 || self.Passed < 60 {
		t.Fatalf("browser vectors: %d passed, failed: %+v", self.Passed, self.Failed)
	}

	// Keyboard: the first Tab reaches the skip link, with a visible focus ring.
	var focus struct{ Class, Outline string }
	b.run("tab", chromedp.KeyEvent(kb.Tab))
	b.eval("focus ring", `({Class: document.activeElement.className, Outline: getComputedStyle(document.activeElement).outlineStyle})`, &focus)
	if focus.Class != "skip" || focus.Outline == "none" {
		t.Errorf("first Tab: focus on %q with outline %q; want the skip link, outlined", focus.Class, focus.Outline)
	}

	b.signIn(d.server, d.approver)
	b.run("overview", chromedp.WaitVisible("#raft-index", chromedp.ByQuery))
	b.checkAccessible("overview")

	// See an enrolled node: the agent writ dev runs.
	b.run("fleet", chromedp.Navigate(d.server+"/ui/fleet"), chromedp.WaitVisible(`#nodes tbody tr`, chromedp.ByQuery))
	if s := b.text(`#nodes tbody tr .badge`); s != "ready" {
		t.Errorf("the dev agent is %q, want ready", s)
	}
	b.shoot("fleet")
	var nodePage string
	b.run("node page", chromedp.Click(`#nodes tbody tr a`, chromedp.ByQuery), chromedp.WaitVisible("#node-status", chromedp.ByQuery),
		chromedp.Location(&nodePage))
	b.checkAccessible("node")

	// The approver loads their key from the dev.json file; it is found
	// among their registered keys.
	b.run("approvals", chromedp.Navigate(d.server+"/ui/approvals"), chromedp.WaitVisible("#key-file", chromedp.ByQuery),
		chromedp.SetUploadFiles("#key-file", []string{d.devJSON}, chromedp.ByQuery),
		chromedp.WaitVisible(`#key-state[data-state="ready"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#live-status[data-state="live"]`, chromedp.ByQuery))
	b.eval("mark the page", `window.notReloaded = true`, nil)

	// Two intents run first, so that the receipt verified below sits inside
	// a tree, with a real inclusion proof.
	d.submit(t, "echo", `{"msg":"first"}`)
	d.submit(t, "echo", `{"msg":"second"}`)
	// An intent submitted through the API appears in the queue, live.
	id := d.submit(t, "echo_approval", `{"msg":"hello <dashboard> & \u2028 friends","n":1.50}`)
	b.run("the intent appears in the queue", chromedp.WaitVisible("#approve-"+id, chromedp.ByID))
	var same bool
	b.eval("no reload", `window.notReloaded === true`, &same)
	if !same {
		t.Fatal("the queue was reloaded, not updated live")
	}
	if got := b.text(`#approval-` + id + ` pre.params`); got != "{\"msg\":\"hello <dashboard> & \u2028 friends\",\"n\":1.5}" {
		t.Errorf("canonical params shown: %q", got)
	}
	b.checkAccessible("approvals")
	b.shoot("approvals")

	// Approve: signed in this browser, sent with the session's CSRF token.
	b.run("approve", chromedp.Click("#approve-"+id, chromedp.ByID),
		chromedp.WaitVisible(`#outcome-`+id+`[data-state="sent"]`, chromedp.ByQuery))
	var sent string
	b.eval("the approval sent", `window.writLastApproval`, &sent)
	if status, code := b.post("/v1/approvals", fmt.Sprintf("%q", sent), true); status != 409 || code != "approval_replayed" {
		t.Errorf("the same approval again: %d %q, want 409 approval_replayed", status, code)
	}
	if status, code := b.post("/v1/approvals", fmt.Sprintf("%q", sent), false); status != 403 || code != "csrf" {
		t.Errorf("an approval without the CSRF token: %d %q, want 403 csrf", status, code)
	}
	if status, code := b.post("/ui/signout", `""`, false); status != 403 || code != "csrf" {
		t.Errorf("sign-out without the CSRF token: %d %q, want 403 csrf", status, code)
	}

	// The intent runs on the dev agent and completes; its page follows live.
	b.run("intent page", chromedp.Navigate(d.server+"/ui/intents/"+id), chromedp.WaitVisible("#intent-state", chromedp.ByQuery))
	b.run("completed", chromedp.WaitVisible(`#tl-receipt a#receipt-link`, chromedp.ByQuery))
	if s := b.text("#intent-state"); s != "completed" {
		t.Fatalf("intent %s is %q, want completed", id, s)
	}
	if s := b.text("#tl-approval"); !strings.Contains(s, "approve by dev-approver") {
		t.Errorf("timeline approval: %q", s)
	}
	b.checkAccessible("intent")
	b.shoot("intent")
	d.submit(t, "echo", `{"msg":"after"}`)
	b.run("intents list", chromedp.Navigate(d.server+"/ui/intents?tool=echo_approval"), chromedp.WaitVisible("#intent-"+id, chromedp.ByID))
	b.checkAccessible("intents")
	b.shoot("intents")
	// The node's page lists the dispatch it ran.
	b.run("node page again", chromedp.Navigate(nodePage), chromedp.WaitVisible("#intent-"+id, chromedp.ByID))
	b.shoot("node")

	// Before the person trusts a key, a proof that holds against the key
	// the server names is not called verified-by-a-trusted-key.
	var trusted string
	b.run("ledger", chromedp.Navigate(d.server+"/ui/ledger?intent="+id), chromedp.WaitVisible("#verify", chromedp.ByQuery),
		chromedp.Click("#verify", chromedp.ByQuery), chromedp.WaitVisible(`#verify-result[data-verified]`, chromedp.ByQuery),
		chromedp.AttributeValue("#verify-result", "data-trusted", &trusted, nil, chromedp.ByQuery))
	if trusted != "false" {
		t.Errorf("the server's own key was trusted without the person saving it: data-trusted=%q", trusted)
	}
	// Its receipt, verified by the page's own code against the key this
	// browser trusts (dev.json's, typed in).
	b.run("trust", chromedp.SetValue("#trusted-key", d.creds.LedgerKey, chromedp.ByQuery), chromedp.Click("#trust-save", chromedp.ByQuery),
		chromedp.Click("#verify", chromedp.ByQuery), chromedp.WaitVisible(`#verify-result[data-trusted="true"]`, chromedp.ByQuery))
	var verified string
	b.run("verdict", chromedp.AttributeValue("#verify-result", "data-verified", &verified, nil, chromedp.ByQuery),
		chromedp.AttributeValue("#verify-result", "data-trusted", &trusted, nil, chromedp.ByQuery))
	if verified != "true" || trusted != "true" {
		t.Fatalf("receipt verification in the browser: %q: %s", verified, b.text("#verify-steps"))
	}
	if steps := b.text("#verify-steps"); strings.Contains(steps, "(0 hashes)") {
		t.Errorf("the receipt was proved with an empty proof: %s", steps)
	}
	// A key the browser does not trust is refused.
	b.run("wrong key", chromedp.SetValue("#trusted-key", "other+00000000+AZadkvN/WEw8K+ToKrhEAGnActbGdVDVw3es2h21jaPN", chromedp.ByQuery),
		chromedp.Click("#verify", chromedp.ByQuery), chromedp.WaitVisible(`#verify-result[data-verified="false"]`, chromedp.ByQuery))
	b.run("right key again", chromedp.SetValue("#trusted-key", d.creds.LedgerKey, chromedp.ByQuery),
		chromedp.Click("#verify", chromedp.ByQuery), chromedp.WaitVisible(`#verify-result[data-verified="true"]`, chromedp.ByQuery))
	b.checkAccessible("ledger")
	b.shoot("ledger")
	b.run("overview again", chromedp.Navigate(d.server+"/ui/"), chromedp.WaitVisible("#cp-size", chromedp.ByQuery))
	b.shoot("overview")

	// A viewer sees the queue but is offered no decision, and the server
	// refuses one anyway.
	b.signOut()
	b.signIn(d.server, d.viewer)
	other := d.submit(t, "echo_approval", `{"msg":"for the viewer"}`)
	b.run("viewer's queue", chromedp.Navigate(d.server+"/ui/approvals"), chromedp.WaitVisible("#why-"+other, chromedp.ByID))
	var offered int
	b.eval("no approve button", `document.querySelectorAll("button[data-decision]").length`, &offered)
	if offered != 0 {
		t.Errorf("a viewer is offered %d approve/deny buttons", offered)
	}
	var forged string
	seed := d.devJSON
	raw, _ := os.ReadFile(seed)
	b.eval("sign as the approver in the viewer's browser", fmt.Sprintf(`(async () => {
		const keys = await import("/ui/static/keys.js"), crypto = await import("/ui/static/crypto.js"), p = await import("/ui/static/protocol.js");
		const {pkcs8} = keys.readKeyFile(%q);
		const {key} = await crypto.importPrivate(pkcs8);
		const card = document.getElementById("approval-%s").dataset;
		return p.signApproval(p.buildApproval({intentID: card.intent, payloadHash: card.payloadHash, tenant: card.tenant,
			approver: "dev-approver", decision: "approve", keyID: "dev-approver"}), key);
	})()`, string(raw), other), &forged)
	if status, code := b.post("/v1/approvals", fmt.Sprintf("%q", forged), true); status != 403 || code != "approval_forbidden" {
		t.Errorf("a viewer's approval: %d %q, want 403 approval_forbidden", status, code)
	}
	t.Logf("dashboard end to end in %s", time.Since(start).Round(time.Millisecond))
}
