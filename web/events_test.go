package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/writhq/writ/internal/eventually"
)

// testServer serves a dashboard over a fake backend the way the control
// plane mounts it.
func testServer(t *testing.T, mod func(*Config)) (*Dashboard, *fakeBackend, *httptest.Server) {
	t.Helper()
	fb := newFake()
	cfg := DefaultConfig()
	cfg.Backend = fb
	if mod != nil {
		mod(&cfg)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ui/", d)
	mux.Handle("GET /v1/events", d.Events())
	mux.Handle("POST /v1/approvals", d.GuardApproval(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"state":"dispatched"}`))
	})))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.Close(); d.Close() })
	return d, fb, srv
}

func dial(t *testing.T, srv *httptest.Server, query string, h http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	u := "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/events" + query
	return websocket.DefaultDialer.Dial(u, h)
}

func readEvent(t *testing.T, c *websocket.Conn) Event {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, b, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("reading an event: %v", err)
	}
	var ev Event
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestEventsAuthentication(t *testing.T) {
	_, _, srv := testServer(t, nil)
	for _, c := range []struct {
		name string
		h    http.Header
	}{
		{"nothing", nil},
		{"wrong bearer", http.Header{"Authorization": {"Bearer nope"}}},
		{"cookie without origin", http.Header{"Cookie": {"writ_session=secret-tok-admin"}}},
		{"cookie from another origin", http.Header{"Cookie": {"writ_session=secret-tok-admin"}, "Origin": {"http://evil.example"}}},
		{"unknown session", http.Header{"Cookie": {"writ_session=forged"}, "Origin": {srv.URL}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, resp, err := dial(t, srv, "", c.h)
			if err == nil {
				conn.Close()
				t.Fatal("connected")
			}
			if resp == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("got %v, want 401", resp)
			}
		})
	}
}

func TestEventsResumeAndReset(t *testing.T) {
	d, fb, srv := testServer(t, func(c *Config) { c.EventBuffer = 16 })
	fb.SignIn(t.Context(), "tok-approver", time.Hour)
	fb.put(IntentDetail{IntentSummary: IntentSummary{ID: "a1", Tenant: "acme", State: "pending_approval"}})
	fb.put(IntentDetail{IntentSummary: IntentSummary{ID: "g1", Tenant: "globex", State: "pending_approval"}})
	h := http.Header{"Cookie": {"writ_session=secret-tok-approver"}, "Origin": {srv.URL}}
	epoch, seq := d.hub.position()
	conn, _, err := dial(t, srv, "?epoch="+epoch+"&since="+itoa(seq), h)
	if err != nil {
		t.Fatal(err)
	}
	d.Changed(7, []Change{{"intent", "g1"}, {"intent", "a1"}, {"intent", "a1"}}, false)
	ev := readEvent(t, conn)
	// The other tenant's intent is not sent to a tenant's approver, and a
	// change named twice in one entry is one event.
	if ev.Type != "intent" || ev.ID != "a1" || ev.Index != 7 || ev.Seq != seq+2 {
		t.Fatalf("got %+v; want intent a1 at index 7, seq %d", ev, seq+2)
	}
	conn.Close()
	// Missed while away: resumed from the last event seen.
	d.Changed(8, []Change{{"intent", "a1"}}, false)
	conn, _, err = dial(t, srv, "?epoch="+epoch+"&since="+itoa(ev.Seq), h)
	if err != nil {
		t.Fatal(err)
	}
	if got := readEvent(t, conn); got.Seq != ev.Seq+1 || got.Index != 8 {
		t.Fatalf("resumed with %+v, want seq %d", got, ev.Seq+1)
	}
	conn.Close()
	// Too far behind for the buffer, or another epoch: reset.
	for i := 0; i < 40; i++ {
		d.Changed(uint64(9+i), []Change{{"intent", "a1"}}, false)
	}
	waitSeq(t, d, ev.Seq+41)
	for _, q := range []string{"?epoch=" + epoch + "&since=" + itoa(ev.Seq), "?epoch=older&since=3"} {
		conn, _, err = dial(t, srv, q, h)
		if err != nil {
			t.Fatal(err)
		}
		if got := readEvent(t, conn); got.Type != "reset" {
			t.Fatalf("%s: got %+v, want reset", q, got)
		}
		conn.Close()
	}
}

func TestSlowClientIsDropped(t *testing.T) {
	d, fb, srv := testServer(t, func(c *Config) { c.SendQueue = 4 })
	fb.put(IntentDetail{IntentSummary: IntentSummary{ID: "a1", Tenant: "acme"}})
	conn, _, err := dial(t, srv, "", http.Header{"Authorization": {"Bearer admin-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The client reads nothing: its queue fills and the hub drops it
	// instead of waiting. Publishing never blocks.
	done := make(chan struct{})
	go func() {
		for i := 0; i < 5000; i++ {
			d.hub.publish(&Event{Type: "intent", ID: "a1", Page: "intents", Tenant: "acme", Intent: &IntentSummary{ID: strings.Repeat("x", 512)}})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("publishing blocked on a slow client")
	}
	eventually.NoError(t, "the slow subscriber to be dropped", func() error {
		d.hub.mu.Lock()
		n := len(d.hub.subs)
		d.hub.mu.Unlock()
		if n != 0 {
			return fmt.Errorf("%d subscribers left; the slow one was not dropped", n)
		}
		return nil
	})
}

func TestChangesNeverBlock(t *testing.T) {
	d, _, _ := testServer(t, func(c *Config) { c.Changes = 4 })
	d.hub.stop() // nothing drains the queue now
	start := time.Now()
	for i := 0; i < 1000; i++ {
		d.Changed(uint64(i), []Change{{"intent", "x"}}, false)
	}
	if !d.hub.lost.Load() {
		t.Fatal("overflowing the change queue was not noted; clients would miss changes silently")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("Changed waited")
	}
}

func waitSeq(t *testing.T, d *Dashboard, seq uint64) {
	t.Helper()
	eventually.True(t, fmt.Sprintf("the hub to reach event %d", seq), func() bool {
		_, s := d.hub.position()
		return s >= seq
	})
}

func itoa(n uint64) string { return url.QueryEscape(strings.TrimSpace(jsonNumber(n))) }

func jsonNumber(n uint64) string { b, _ := json.Marshal(n); return string(b) }

// TestHubIdlesUnwatched: with no client and no page served for IdleAfter, no
// events are made (the backend is not read); a client resuming from before
// reloads; a page served ends the idleness, and its client misses nothing.
func TestHubIdlesUnwatched(t *testing.T) {
	// Long enough that a loaded machine does not idle the hub between a page
	// served and its client's change; the test sleeps past it once.
	d, fb, srv := testServer(t, func(c *Config) { c.IdleAfter = time.Second })
	fb.put(IntentDetail{IntentSummary: IntentSummary{ID: "a1", Tenant: "acme"}})
	h := http.Header{"Authorization": {"Bearer admin-secret"}}
	epoch, seq := d.hub.position()
	d.Changed(1, []Change{{"intent", "a1"}}, false)
	waitSeq(t, d, seq+1) // watched a moment ago: made
	time.Sleep(1300 * time.Millisecond)
	reads := fb.intentReads.Load()
	// A batch dropped for a full queue while idle is covered by the gap: it
	// must not send a later client a needless reset.
	d.hub.lost.Store(true)
	for i := range 20 {
		d.Changed(uint64(2+i), []Change{{"intent", "a1"}}, false)
	}
	// The hub is idle: the changes are taken and dropped, with one gap.
	eventually.True(t, "the idle hub to take the changes", func() bool { return len(d.hub.in) == 0 })
	time.Sleep(20 * time.Millisecond)
	if got := fb.intentReads.Load(); got != reads {
		t.Fatalf("an idle hub read the backend %d times", got-reads)
	}
	conn, _, err := dial(t, srv, "?epoch="+epoch+"&since="+itoa(seq+1), h)
	if err != nil {
		t.Fatal(err)
	}
	if got := readEvent(t, conn); got.Type != "reset" {
		t.Fatalf("resumed across the gap: got %+v, want reset", got)
	}
	// Subscribed: events again, and resuming from now on misses nothing.
	d.Changed(30, []Change{{"intent", "a1"}}, false)
	if got := readEvent(t, conn); got.Type != "intent" || got.Index != 30 {
		t.Fatalf("got %+v, want the intent event of index 30", got)
	}
	conn.Close()
	_, now := d.hub.position()
	d.Changed(31, []Change{{"intent", "a1"}}, false)
	conn, _, err = dial(t, srv, "?epoch="+epoch+"&since="+itoa(now), h)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := readEvent(t, conn); got.Type != "intent" || got.Index != 31 {
		t.Fatalf("resumed after a page was served: got %+v, want the event of index 31", got)
	}
}
