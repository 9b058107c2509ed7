package controlplane

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// TestRefuseWhileFull: a server of a cluster whose disk is full refuses API
// requests at once (503 no_leader, Retry-After), but for health, version and
// the endpoints between servers; a request already waiting is cut short
// when the disk fills; space again ends the refusals. A server alone never
// refuses for it: it has nowhere to send its clients.
func TestRefuseWhileFull(t *testing.T) {
	s := &Server{space: newDiskSpace(), cluster: &cluster{}}
	waited := make(chan error, 1)
	h := s.refuseWhileFull(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("wait") != "" {
			select {
			case <-r.Context().Done():
				waited <- r.Context().Err()
			case <-time.After(30 * time.Second):
				waited <- nil
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	refused := func(rec *httptest.ResponseRecorder) bool {
		var e protocol.ErrorResponse
		return rec.Code == http.StatusServiceUnavailable && jsonx.UnmarshalLenient(rec.Body.Bytes(), &e) == nil &&
			e.Error.Code == protocol.CodeNoLeader && strings.Contains(e.Error.Message, "disk is full") && rec.Header().Get("Retry-After") != ""
	}
	if rec := get("/v1/intents/x"); rec.Code != http.StatusOK {
		t.Fatalf("with space: %d", rec.Code)
	}

	// The disk fills while a request waits: its wait ends at once.
	done := make(chan struct{})
	go func() { defer close(done); get("/v1/intents/x?wait=30s") }()
	time.Sleep(50 * time.Millisecond) // the request is waiting (if not yet, it is refused below: the test still ends)
	s.space.logAppend(true)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting request was not cut short when the disk filled")
	}
	select {
	case err := <-waited:
		if err == nil {
			t.Fatal("the wait ran to its end")
		}
	default: // refused before its wait began
	}

	for _, p := range []string{"/v1/intents/x", "/v1/intents", "/v1/tools", "/v1/ledger/checkpoint"} {
		if rec := get(p); !refused(rec) {
			t.Errorf("%s with the log's disk full: %d %s, want 503 no_leader naming the disk", p, rec.Code, rec.Body)
		}
	}
	for _, p := range []string{"/v1/health", "/v1/version", "/v1/internal/forward", "/metrics", "/"} {
		if rec := get(p); rec.Code != http.StatusOK {
			t.Errorf("%s with the disk full: %d, want it served", p, rec.Code)
		}
	}
	if !s.diskFull() {
		t.Fatal("diskFull false with the log's disk full")
	}
	s.space.logAppend(false)
	if rec := get("/v1/intents/x"); rec.Code != http.StatusOK {
		t.Fatalf("after space again: %d", rec.Code)
	}

	// The FSM's waits count for fsmSpaceWindow after the last one.
	s.space.fsmWaits()
	if !refused(get("/v1/tools")) {
		t.Fatal("not refused while the FSM waits for space")
	}
	s.space.fsmWait.Store(time.Now().Add(-fsmSpaceWindow - time.Second).UnixNano())
	if rec := get("/v1/tools"); rec.Code != http.StatusOK {
		t.Fatalf("%s after the FSM's last wait: %d", fsmSpaceWindow, rec.Code)
	}

	alone := &Server{space: newDiskSpace()}
	alone.space.logAppend(true)
	if alone.diskFull() {
		t.Fatal("a server alone reports its disk full to refuse")
	}
}

// TestUntilFullEnds: untilFull's context ends with its parent too, and a
// signal reaches every context made before it.
func TestUntilFullEnds(t *testing.T) {
	d := newDiskSpace()
	parent, cancelParent := context.WithCancel(context.Background())
	a, cancelA := d.untilFull(parent)
	defer cancelA()
	b, cancelB := d.untilFull(context.Background())
	defer cancelB()
	cancelParent()
	<-a.Done()
	if b.Err() != nil {
		t.Fatal("a parent's end ended another context")
	}
	d.fsmWaits()
	select {
	case <-b.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the FSM's wait for space did not end a waiting context")
	}
	c, cancelC := d.untilFull(context.Background())
	defer cancelC()
	d.fsmWaits() // within the window: already full, no new signal
	select {
	case <-c.Done():
		t.Fatal("a second wait within the window signalled again")
	case <-time.After(50 * time.Millisecond):
	}
}
