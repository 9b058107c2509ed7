package web

import (
	"strings"
	"testing"
	"time"
)

// TestIntentPageShowsEgress: a result's egress audit is listed on the
// intent page, refusals with their code and the host escaped, opened when
// something was refused; the digest of what ran is shown.
func TestIntentPageShowsEgress(t *testing.T) {
	t.Parallel()
	_, fb, srv := testServer(t, nil)
	fb.put(IntentDetail{IntentSummary: IntentSummary{ID: "e1", Tenant: "acme", State: "completed"}, Params: `{}`,
		Result: &ResultInfo{Status: "ok", Sandbox: "gvisor", ExecDigest: "sha256:" + strings.Repeat("ab", 32),
			Egress: &EgressInfo{Allowed: 1, Refused: 3, BytesUp: 517, BytesDown: 4096, Entries: []EgressRow{
				{Host: "api.example", Port: 443, Via: "connect", Allowed: true, BytesUp: 517, BytesDown: 4096},
				{Host: "<script>x</script>", Port: 443, Via: "sni", Reason: "sni_mismatch"},
			}}}})
	fb.put(IntentDetail{IntentSummary: IntentSummary{ID: "e2", Tenant: "acme", State: "completed"}, Params: `{}`,
		Result: &ResultInfo{Status: "ok", Sandbox: "wasm"}})
	fb.SignIn(t.Context(), "tok-viewer", time.Hour)
	status, page := request(t, "GET", srv.URL+"/ui/intents/e1", "secret-tok-viewer", "", "", "")
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	for _, w := range []string{`id="egress" open`, "1 allowed, 3 refused, 517 bytes up, 4096 down", "<code>api.example</code>",
		"refused: <code>sni_mismatch</code>", "&lt;script&gt;", `id="exec-digest">sha256:abab`} {
		if !strings.Contains(page, w) {
			t.Errorf("the page lacks %q", w)
		}
	}
	if strings.Contains(page, "<script>x") {
		t.Error("the host is not escaped")
	}
	_, page = request(t, "GET", srv.URL+"/ui/intents/e2", "secret-tok-viewer", "", "", "")
	if strings.Contains(page, `id="egress"`) || strings.Contains(page, `id="exec-digest"`) {
		t.Error("a result without egress or attest shows them")
	}
}
