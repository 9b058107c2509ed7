package controlplane_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestDashboardIntentOutput: the intent page shows a run's output, taken
// from the output table, to a viewer of the intent's tenant, and nothing of
// it to a viewer of another tenant.
func TestDashboardIntentOutput(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	base := "http://" + d.s.Addr().String()
	marker := fmt.Sprintf("dashboard-secret-%d", time.Now().UnixNano())
	sub, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"`+marker+`"}`), nil, 10*time.Second)
	if err != nil || sub.State != "completed" {
		t.Fatalf("submit: %+v %v", sub, err)
	}
	page := func(tenant string) (int, string) {
		var tok struct{ Token string }
		if err := d.admin.AdminJSON(ctx, "POST", "tokens", []byte(`{"role":"viewer","tenant":"`+tenant+`"}`), &tok); err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", base+"/ui/signin", strings.NewReader(url.Values{"token": {tok.Token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if len(resp.Cookies()) == 0 {
			t.Fatalf("viewer of %s did not sign in: %d", tenant, resp.StatusCode)
		}
		req, _ = http.NewRequest("GET", base+"/ui/intents/"+url.PathEscape(sub.IntentID), nil)
		req.AddCookie(resp.Cookies()[0])
		resp, err = noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The params carry the marker too (the sim node echoes them): look in
	// the output's own element.
	output := func(body string) string {
		_, after, ok := strings.Cut(body, `aria-label="Output">`)
		before, _, _ := strings.Cut(after, "</pre>")
		if !ok {
			return ""
		}
		return before
	}
	if code, body := page(d.creds.Tenant); code != http.StatusOK || !strings.Contains(output(body), marker) {
		t.Fatalf("the tenant's viewer: %d, output element %q", code, output(body))
	}
	if code, body := page("globex"); code != http.StatusNotFound || strings.Contains(body, marker) {
		t.Fatalf("another tenant's viewer: %d, output shown: %v", code, strings.Contains(body, marker))
	}
}
