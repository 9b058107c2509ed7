package controlplane_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/ledger"
	"github.com/writhq/writ/protocol"
)

type hookReceiver struct {
	mu       sync.Mutex
	fails    int // answer 500 to this many requests first
	bodies   []protocol.WebhookPayload
	requests int
	badSigs  int
}

func (h *hookReceiver) handler(t *testing.T, secret []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		h.requests++
		if err := controlplane.VerifyWebhook(secret, r.Header.Get("Writ-Signature"), body, time.Now(), time.Minute); err != nil {
			h.badSigs++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if h.fails > 0 {
			h.fails--
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		var p protocol.WebhookPayload
		if err := jsonx.UnmarshalLenient(body, &p); err != nil || r.Header.Get("Writ-Event") != p.Event || r.Header.Get("Writ-Delivery") != p.Delivery {
			t.Errorf("delivery %s: %v, headers %v", body, err, r.Header)
		}
		if strings.Contains(string(body), "wire money") {
			t.Errorf("a delivery carries the intent's params: %s", body)
		}
		h.bodies = append(h.bodies, p)
	}
}

func (h *hookReceiver) wait(t *testing.T, n int) []protocol.WebhookPayload {
	t.Helper()
	var got []protocol.WebhookPayload
	eventually.True(t, fmt.Sprintf("%d deliveries", n), func() bool {
		h.mu.Lock()
		got = append([]protocol.WebhookPayload(nil), h.bodies...)
		h.mu.Unlock()
		return len(got) >= n
	})
	return got
}

// An intent waiting for approval is announced to the webhook, signed, and
// retried after a 500; its approval is announced as decided; the delivery
// log says so; nothing carries the params.
func TestWebhooksAnnounceApprovals(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef-webhook")
	recv := &hookReceiver{fails: 1}
	srv := httptest.NewServer(recv.handler(t, secret))
	defer srv.Close()
	d := startDevWith(t, func(c *controlplane.Config) {
		c.Webhooks = []controlplane.Webhook{{URL: srv.URL, Secret: secret, RetryDelay: 50 * time.Millisecond}}
	})
	ctx := context.Background()
	raw := d.intent(t, "echo_approval", `{"msg":"wire money"}`)
	r, err := d.c.Submit(ctx, raw, nil, 0)
	if err != nil || r.State != "pending_approval" {
		t.Fatalf("submit: %+v %v", r, err)
	}
	got := recv.wait(t, 1)
	p := got[0]
	if p.Event != controlplane.EventApprovalRequested || p.Intent.ID != r.IntentID || p.Intent.State != "pending_approval" ||
		p.Intent.Tool != "echo_approval" || !strings.Contains(p.Text, "awaits approval") || p.Approval != nil {
		t.Fatalf("requested: %+v", p)
	}
	if _, err := d.c.Approve(ctx, d.approval(t, raw, "approve")); err != nil {
		t.Fatal(err)
	}
	got = recv.wait(t, 2)
	p = got[1]
	if p.Event != controlplane.EventApprovalDecided || p.Intent.ID != r.IntentID || p.Approval == nil ||
		p.Approval.Approver != d.creds.Approver.Approver || p.Delivery == got[0].Delivery {
		t.Fatalf("decided: %+v", p)
	}
	// The receiver has the delivery before its sender has read the answer
	// and logged it: the log is read until it holds both.
	var view protocol.WebhooksView
	eventually.Within(t, 30*time.Second, "both deliveries in the log", func() bool {
		if err := d.admin.AdminJSON(ctx, "GET", "webhooks", nil, &view); err != nil {
			t.Fatal(err)
		}
		return len(view.Deliveries) >= 2
	})
	if len(view.Webhooks) != 1 || view.Webhooks[0].URL != srv.URL || len(view.Deliveries) != 2 || view.Deliveries[0].URL != srv.URL {
		t.Fatalf("webhooks view: %+v", view)
	}
	// Newest first: the decided delivery took one attempt, the requested
	// one two (the first got a 500).
	if dl := view.Deliveries; !dl[0].OK || dl[0].Attempts != 1 || !dl[1].OK || dl[1].Attempts != 2 || dl[1].Status != 200 {
		t.Fatalf("deliveries: %+v", dl)
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if recv.requests != 3 || recv.badSigs != 0 {
		t.Fatalf("%d requests, %d with a bad signature; want 3 and 0", recv.requests, recv.badSigs)
	}
}

func TestWebhookSignature(t *testing.T) {
	t.Parallel()
	secret, body, now := []byte("0123456789abcdef"), []byte(`{"event":"x"}`), time.Unix(1_800_000_000, 0)
	ts := "1800000000"
	header := "t=" + ts + ",v1=" + controlplane.WebhookSignature(secret, ts, body)
	if err := controlplane.VerifyWebhook(secret, header, body, now, time.Minute); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		header string
		body   []byte
		now    time.Time
	}{
		"other body":    {header, []byte(`{"event":"y"}`), now},
		"other secret":  {"t=" + ts + ",v1=" + controlplane.WebhookSignature([]byte("another secret!!"), ts, body), body, now},
		"too old":       {header, body, now.Add(2 * time.Minute)},
		"no signature":  {"t=" + ts, body, now},
		"no time":       {"v1=" + controlplane.WebhookSignature(secret, ts, body), body, now},
		"garbage":       {"x", body, now},
		"replayed time": {"t=1800000001,v1=" + controlplane.WebhookSignature(secret, ts, body), body, now},
	} {
		if err := controlplane.VerifyWebhook(secret, c.header, c.body, c.now, time.Minute); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
}

func TestWebhookConfigRefused(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]controlplane.Webhook{
		"plain http elsewhere": {URL: "http://hooks.example/x", Secret: []byte("0123456789abcdef")},
		"short secret":         {URL: "https://hooks.example/x", Secret: []byte("short")},
		"unknown event":        {URL: "https://hooks.example/x", Secret: []byte("0123456789abcdef"), Events: []string{"intent.everything"}},
		"not a URL":            {URL: "hooks.example", Secret: []byte("0123456789abcdef")},
		"credentials in URL":   {URL: "https://u:p@hooks.example/x", Secret: []byte("0123456789abcdef")},
	} {
		cfg := controlplane.DefaultConfig()
		cfg.ID, cfg.DataDir, cfg.Dev, cfg.HTTPAddr, cfg.Bootstrap = "s1", t.TempDir(), true, "127.0.0.1:0", true
		signer, vkey, err := ledger.NewSigner("writ.test/hooks", make([]byte, 32))
		if err != nil {
			t.Fatal(err)
		}
		cfg.LedgerSigner, cfg.LedgerVerifierKey = signer, vkey
		if err := cfg.Validate(); err != nil {
			t.Fatalf("the base configuration: %v", err)
		}
		cfg.Webhooks = []controlplane.Webhook{h}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "webhook") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A hook's URL path (an incoming webhook's secret) is never shown or logged;
// a redirect is a failed delivery, not a place the signed body goes; names
// cannot become chat markup.
func TestWebhookRedactsAndRefusesRedirects(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef-webhook")
	var mu sync.Mutex
	elsewhere := 0
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { mu.Lock(); elsewhere++; mu.Unlock() }))
	defer other.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/stolen", http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	var logs lockedBuffer
	d := startDevWith(t, func(c *controlplane.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		c.Webhooks = []controlplane.Webhook{{URL: redirect.URL + "/services/T000/B000/XXXXSECRETPATH", Secret: secret, MaxAttempts: 2, RetryDelay: 10 * time.Millisecond}}
	})
	ctx := context.Background()
	raw := d.intent(t, "echo_approval", `{"msg":"x"}`)
	if _, err := d.c.Submit(ctx, raw, nil, 0); err != nil {
		t.Fatal(err)
	}
	var view protocol.WebhooksView
	eventually.True(t, "a delivery in the log", func() bool {
		if err := d.admin.AdminJSON(ctx, "GET", "webhooks", nil, &view); err != nil {
			t.Fatal(err)
		}
		return len(view.Deliveries) > 0
	})
	if len(view.Deliveries) != 1 || view.Deliveries[0].OK || view.Deliveries[0].Status != http.StatusTemporaryRedirect || view.Deliveries[0].Attempts != 2 {
		t.Fatalf("deliveries: %+v", view.Deliveries)
	}
	if view.Webhooks[0].URL != redirect.URL+"/…" || view.Deliveries[0].URL != redirect.URL+"/…" {
		t.Fatalf("shown URLs: %q, %q", view.Webhooks[0].URL, view.Deliveries[0].URL)
	}
	mu.Lock()
	defer mu.Unlock()
	if elsewhere != 0 {
		t.Fatalf("the redirect's target got %d requests", elsewhere)
	}
	if strings.Contains(logs.String(), "SECRETPATH") || !strings.Contains(logs.String(), "webhook not delivered") {
		t.Fatalf("logs:\n%s", logs.String())
	}
	p := protocol.WebhookPayload{Event: controlplane.EventApprovalRequested, Intent: protocol.WebhookIntent{Principal: "<!channel> <https://evil|Approve>", Tool: "a&b"}}
	if got := controlplane.WebhookText(&p); strings.ContainsAny(strings.ReplaceAll(strings.ReplaceAll(got, "&lt;", ""), "&gt;", ""), "<>") || !strings.Contains(got, "a&amp;b") {
		t.Fatalf("text: %q", got)
	}
}
