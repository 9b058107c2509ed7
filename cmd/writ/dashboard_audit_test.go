package main_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/writhq/writ/internal/testtier"
)

// TestDashboardAuditInChromium: an admin's Audit page shows writ dev's
// setup on the record; the lock form makes a lock (listed, and on the
// record as the admin's session), its button deletes it (on the record
// too); the entry opens on the ledger page and its inclusion verifies in
// the browser; a viewer is offered no Audit page and is refused it.
func TestDashboardAuditInChromium(t *testing.T) {
	testtier.Slow(t, "a browser")
	b := startBrowser(t)
	d := startDevDashboard(t)

	b.signIn(d.server, d.creds.AdminToken)
	b.run("audit page", chromedp.Click(`nav a[href="/ui/audit"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#admin-entries", chromedp.ByQuery), chromedp.WaitVisible("#no-locks", chromedp.ByQuery))
	if s := b.text(`#admin-entries tbody tr[data-action="tool.put"]`); !strings.Contains(s, "dev") {
		t.Errorf("writ dev's tool.put: %q", s)
	}
	b.checkAccessible("audit")

	// Lock a tenant for an hour, by the form.
	b.run("lock", chromedp.SendKeys("#lock-tenant", "globex", chromedp.ByQuery), chromedp.SendKeys("#lock-ttl", "1h", chromedp.ByQuery),
		chromedp.SendKeys("#lock-reason", "runaway agent", chromedp.ByQuery), chromedp.Click("#lock-create", chromedp.ByQuery),
		chromedp.WaitVisible("#locks tbody tr", chromedp.ByQuery))
	row := b.text("#locks tbody tr")
	if !strings.Contains(row, "globex") || !strings.Contains(row, "runaway agent") {
		t.Errorf("the lock's row: %q", row)
	}
	newest := b.text("#admin-entries tbody tr")
	if !strings.Contains(newest, "lock.create") || !strings.Contains(newest, "user:admin-token") || !strings.Contains(newest, "globex") {
		t.Errorf("the newest entry after the lock: %q", newest)
	}
	b.shoot("audit")

	// Delete it with its button.
	b.run("delete the lock", chromedp.Click(`#locks tbody tr button`, chromedp.ByQuery), chromedp.WaitVisible("#no-locks", chromedp.ByQuery))
	if s := b.text("#admin-entries tbody tr"); !strings.Contains(s, "lock.delete") || !strings.Contains(s, "user:admin-token") {
		t.Errorf("the newest entry after the delete: %q", s)
	}
	// An entry opens on the ledger page, which fetches it whole.
	b.run("an entry on the ledger page", chromedp.Click(`#admin-entries tbody tr a`, chromedp.ByQuery),
		chromedp.WaitVisible("#receipt", chromedp.ByQuery), chromedp.Poll(`document.querySelector("#receipt-json").textContent.includes("writ.admin/v1")`, nil),
		chromedp.Click("#verify", chromedp.ByQuery), chromedp.WaitVisible(`#verify-result[data-verified="true"]`, chromedp.ByQuery))
	// A lock with no reason is refused, and records nothing.
	if status, code := b.postForm("/ui/locks", "tenant=globex&reason="); status != 400 || code != "malformed" {
		t.Errorf("a lock without a reason: %d %q, want 400 malformed", status, code)
	}
	b.signOut()

	b.signIn(d.server, d.viewer)
	var links int
	b.eval("the viewer's nav", `document.querySelectorAll('nav a[href="/ui/audit"]').length`, &links)
	if links != 0 {
		t.Error("a viewer is offered the Audit page")
	}
	if status, code := b.postForm("/ui/locks", "tenant=globex&reason=r"); status != 403 || code != "forbidden" {
		t.Errorf("a viewer's lock: %d %q, want 403 forbidden", status, code)
	}
	var title string
	b.run("the viewer at /ui/audit", chromedp.Navigate(d.server+"/ui/audit"), chromedp.Title(&title))
	if !strings.HasPrefix(title, "Forbidden") {
		t.Errorf("a viewer at /ui/audit: page %q, want Forbidden", title)
	}
}

// postForm sends a form from the page with the session's CSRF token and
// returns the status and the error code.
func (b *browser) postForm(path, form string) (int, string) {
	b.t.Helper()
	var r struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	}
	b.eval("POST "+path, `fetch(`+jsString(path)+`, {method: "POST", body: `+jsString(form)+` + "&csrf=" + encodeURIComponent(document.body.dataset.csrf),
		credentials: "same-origin", redirect: "manual", headers: {"Content-Type": "application/x-www-form-urlencoded"}})
		.then(async r => ({status: r.status, code: ((await r.json().catch(() => ({}))).error || {}).code || ""}))`, &r)
	return r.Status, r.Code
}

func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
