package controlplane_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// listAs lists GET /v1/intents with query as kind, and fails the test unless
// it is served.
func (w *accessWorld) listAs(t *testing.T, kind, query string) protocol.IntentPage {
	t.Helper()
	status, body := w.get(t, kind, "/v1/intents?"+query)
	var p protocol.IntentPage
	if status != 200 || jsonx.UnmarshalLenient([]byte(body), &p) != nil {
		t.Fatalf("%s lists %q: %d %.300s", kind, query, status, body)
	}
	return p
}

func ids(p protocol.IntentPage) []string {
	var out []string
	for _, in := range p.Intents {
		out = append(out, in.ID)
	}
	return out
}

// TestIntentList: GET /v1/intents pages without duplicates or gaps while
// intents arrive, applies each filter, lists only what the caller's tenant
// may see, carries no params, and refuses bad filters as malformed.
func TestIntentList(t *testing.T) {
	t.Parallel()
	w := newAccessWorld(t)
	d, ctx := w.d, context.Background()
	tenant := d.creds.Tenant
	submit := func(tool, params string, wait time.Duration, mod ...func(*protocol.Intent)) string {
		t.Helper()
		raw := d.intent(t, tool, params, mod...)
		r, err := d.c.Submit(ctx, raw, nil, wait)
		if err != nil {
			t.Fatalf("submit: %v", err)
		}
		return r.IntentID
	}
	principal := func(p string) func(*protocol.Intent) { return func(in *protocol.Intent) { in.Principal = p } }
	run := func(r string) func(*protocol.Intent) { return func(in *protocol.Intent) { in.RunID = r } }

	start := time.Now().UTC()
	var mine []string // newest first
	for i := range 7 {
		mod := []func(*protocol.Intent){run("run-list")}
		if i%2 == 1 {
			mod = append(mod, principal("lister-bot"))
		}
		mine = slices.Insert(mine, 0, submit("echo", `{"msg":"c0nfidential-list"}`, 10*time.Second, mod...))
	}
	pending := submit("echo_approval", `{"msg":"c0nfidential-list"}`, 0, run("run-list"))
	mine = slices.Insert(mine, 0, pending)

	t.Run("paging", func(t *testing.T) {
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 20 {
				t.Fatal("paging does not end")
			}
			q := "run=run-list&limit=3"
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			p := w.listAs(t, controlplane.KindTenant, q)
			if len(p.Intents) > 3 {
				t.Fatalf("a page of %d intents, limit 3", len(p.Intents))
			}
			got = append(got, ids(p)...)
			// New intents arrive between pages: newer than every cursor,
			// they are not on the pages that follow.
			submit("echo", `{}`, 0, run("run-list"))
			if p.Next == "" {
				break
			}
			cursor = p.Next
		}
		if !slices.Equal(got, mine) {
			t.Fatalf("pages list %v, want %v (newest first, no duplicate, no gap)", got, mine)
		}
	})

	t.Run("filters", func(t *testing.T) {
		for _, c := range []struct {
			query string
			want  []string
		}{
			{"run=run-list&principal=lister-bot", []string{mine[2], mine[4], mine[6]}},
			{"run=run-list&tool=echo_approval", []string{pending}},
			{"run=run-list&state=pending_approval", []string{pending}},
			{"run=run-list&state=completed&limit=500", mine[1:]},
			{"run=no-such-run", nil},
			{"run=run-list&since=" + url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339)), nil},
			{"tool=echo_approval&principal=support-bot&since=" + url.QueryEscape(start.Format(time.RFC3339Nano)), []string{pending}},
		} {
			got := ids(w.listAs(t, controlplane.KindTenant, c.query))
			if c.query == "run=run-list&state=completed&limit=500" {
				// Intents submitted by the paging test without waiting may
				// have completed since: keep ours.
				got = slices.DeleteFunc(got, func(id string) bool { return !slices.Contains(mine, id) })
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%s: %v, want %v", c.query, got, c.want)
			}
		}
		p := w.listAs(t, controlplane.KindTenant, "run=run-list&tool=echo_approval")
		in := p.Intents[0]
		if in.Tenant != tenant || in.Principal != "support-bot" || in.RunID != "run-list" || in.State != "pending_approval" ||
			in.AdmittedAt.IsZero() || in.UpdatedAt.IsZero() || in.ReceiptIndex != nil {
			t.Errorf("summary %+v", in)
		}
		done := w.listAs(t, controlplane.KindTenant, "run=run-list&state=completed&limit=1").Intents[0]
		if done.ReceiptIndex == nil {
			t.Errorf("a completed intent's summary has no receipt index: %+v", done)
		}
	})

	t.Run("isolation", func(t *testing.T) {
		for _, c := range []struct {
			kind, query string
			sees        bool
		}{
			{controlplane.KindTenant, "run=run-list", true},
			{controlplane.KindAuditor, "run=run-list", true},
			{controlplane.KindAdmin, "run=run-list", true},
			{controlplane.KindAdmin, "run=run-list&tenant=" + tenant, true},
			{controlplane.KindAdmin, "run=run-list&tenant=globex", false},
			{controlplane.KindOtherTenant, "run=run-list", false},
			{controlplane.KindOtherTenant, "run=run-list&tenant=" + tenant, false},
			{controlplane.KindAuditorOther, "", false},
			{controlplane.KindAuditorOther, "tenant=" + tenant, false},
			{controlplane.KindTenant, "tenant=globex", false},
		} {
			p := w.listAs(t, c.kind, c.query)
			for _, in := range p.Intents {
				if in.Tenant != tenant && c.sees {
					t.Errorf("%s %s: lists %s of tenant %s", c.kind, c.query, in.ID, in.Tenant)
				}
			}
			if got := len(p.Intents) > 0; got != c.sees {
				t.Errorf("%s %s: sees %d intents, want any: %v", c.kind, c.query, len(p.Intents), c.sees)
			}
		}
		for _, kind := range []string{controlplane.KindNone, controlplane.KindViewer, controlplane.KindApprover} {
			if status, body := w.get(t, kind, "/v1/intents"); status != 401 && status != 403 {
				t.Errorf("%s: %d %.200s, want refused", kind, status, body)
			}
		}
		_, body := w.get(t, controlplane.KindAdmin, "/v1/intents?limit=500")
		if strings.Contains(body, "c0nfidential-list") {
			t.Error("the list carries params")
		}
	})

	t.Run("malformed", func(t *testing.T) {
		for _, q := range []string{
			"limit=0", "limit=501", "limit=x", "limit=-1", "state=running", "state=", "since=yesterday",
			"since=2026-01-02", "cursor=%%%", "cursor=bm9kb3Q", "cursor=" + url.QueryEscape("MTIzLg"),
			"color=red", "run=a&run=b", "tool=" + url.QueryEscape("a\x00b"), "principal=" + strings.Repeat("a", 300),
		} {
			status, body := w.get(t, controlplane.KindTenant, "/v1/intents?"+q)
			var e protocol.ErrorResponse
			jsonx.UnmarshalLenient([]byte(body), &e)
			if status != 400 || e.Error.Code != protocol.CodeMalformed {
				t.Errorf("%q: %d %.200s, want 400 malformed", q, status, body)
			}
		}
	})

	t.Run("client", func(t *testing.T) {
		var got []string
		f := client.IntentFilter{Run: "run-list", Principal: "lister-bot", Limit: 2}
		for {
			p, err := d.c.Intents(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ids(*p)...)
			if p.Next == "" {
				break
			}
			f.Cursor = p.Next
		}
		if want := []string{mine[2], mine[4], mine[6]}; !slices.Equal(got, want) {
			t.Fatalf("client pages %v, want %v", got, want)
		}
		_, err := d.c.Intents(ctx, client.IntentFilter{State: "running"})
		var ae *client.Error
		if !errors.As(err, &ae) || ae.Code != protocol.CodeMalformed {
			t.Fatalf("bad state: %v, want malformed", err)
		}
	})
}
