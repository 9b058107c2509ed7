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
// requests at once, before anything is read or written (503 no_leader,
// Retry-After), but for health, version and the endpoints between servers;
// space again ends the refusals. A server alone never refuses for it: it has
// nowhere to send its clients.
func TestRefuseWhileFull(t *testing.T) {
	t.Parallel()
	s := &Server{space: newDiskSpace(), cluster: &cluster{}}
	h := s.refuseWhileFull(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	s.space.logAppend(true)
	for _, p := range []string{"/v1/intents/x", "/v1/intents", "/v1/tools", "/v1/ledger/checkpoint", "/v1/approvals"} {
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

// TestWaitWhileSpace: a wait on a cluster server's state ends when the disk
// fills, and says the disk ended it; a wait that ended otherwise, an answer
// that does not wait (the answer to a write: an approval), and a server
// alone are never cut.
func TestWaitWhileSpace(t *testing.T) {
	t.Parallel()
	s := &Server{space: newDiskSpace(), cluster: &cluster{}}
	ctx, cut := s.waitWhileSpace(context.Background(), time.Minute)
	go func() {
		time.Sleep(20 * time.Millisecond)
		s.space.logAppend(true)
	}()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a wait was not cut short when the disk filled")
	}
	if !cut() {
		t.Fatal("cut false for a wait the disk ended")
	}
	s.space.logAppend(false)

	parent, cancel := context.WithCancel(context.Background())
	ctx, cut = s.waitWhileSpace(parent, time.Minute)
	cancel()
	<-ctx.Done()
	if cut() {
		t.Fatal("cut true for a wait whose caller went away")
	}

	ctx, cut = s.waitWhileSpace(context.Background(), 0)
	s.space.logAppend(false)
	s.space.logAppend(true)
	if ctx.Err() != nil || cut() {
		t.Fatal("an answer that does not wait was cut: a write's own answer must not be refused after the write")
	}
	alone := &Server{space: newDiskSpace()}
	ctx, cut = alone.waitWhileSpace(context.Background(), time.Minute)
	alone.space.logAppend(true)
	if ctx.Err() != nil || cut() {
		t.Fatal("a server alone cut a wait")
	}
}

// TestUntilFullEnds: untilFull's context ends with its parent too, and a
// signal reaches every context made before it.
func TestUntilFullEnds(t *testing.T) {
	t.Parallel()
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
