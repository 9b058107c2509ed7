package client

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// TestConnectionsReused: an orchestrator submitting from many goroutines
// keeps its connections between requests rather than opening (and, with
// TLS, handshaking) a new one for most of them.
func TestConnectionsReused(t *testing.T) {
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"intent_id":"int-1","state":"dispatched"}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := New(srv.URL, "")
	const conc, rounds = 32, 4
	for round := 0; round < rounds; round++ {
		var wg sync.WaitGroup
		for i := 0; i < conc; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.Submit(context.Background(), []byte(`{}`), nil, 0); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		time.Sleep(20 * time.Millisecond) // let the last connections go back to the pool
	}
	// Each round can need conc connections; the first opens them and the
	// others reuse them. Keeping only two idle would open about conc-2 more
	// per round.
	if got := opened.Load(); got > conc+conc/2 {
		t.Errorf("%d rounds of %d concurrent submissions opened %d connections, want at most %d", rounds, conc, got, conc+conc/2)
	}
}

// TestSubmitBody: the body carries the signed bytes unchanged, and bytes that
// are not one JSON value are refused before anything is sent.
func TestSubmitBody(t *testing.T) {
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.Write([]byte(`{"intent_id":"int-1","state":"dispatched"}`))
	}))
	defer srv.Close()
	c := New(srv.URL, "")
	intent, approval := []byte(`{"b": 1, "a":"\u00e9"}`), []byte(` {"x":[1, 2]}`)
	if _, err := c.Submit(context.Background(), intent, approval, 0); err != nil {
		t.Fatal(err)
	}
	if want := `{"intent":{"b": 1, "a":"\u00e9"},"approval": {"x":[1, 2]}}`; string(got) != want {
		t.Errorf("body %s, want %s", got, want)
	}
	for _, bad := range [][]byte{[]byte(`{"a":1},"approval":{}`), []byte(`{`), nil} {
		got = nil
		if _, err := c.Submit(context.Background(), bad, nil, 0); err == nil || got != nil {
			t.Errorf("intent %q: got error %v, body %q; want refused unsent", bad, err, got)
		}
	}
}

// TestIntentResponseDecodesAsV1: the answer the server writes (encoding/json,
// HTML characters escaped) decodes with encoding/json/v2 to exactly what
// encoding/json gives, every member set or absent.
func TestIntentResponseDecodesAsV1(t *testing.T) {
	idx, sup := uint64(7), uint64(9)
	for _, want := range []protocol.IntentResponse{
		{IntentID: "int-1", State: "dispatched"},
		{IntentID: "int-<&>", State: "completed", Policy: &protocol.PolicyDecision{Hash: "sha256:x", Decision: "allow", Policies: []string{"a", "b"}},
			Approval: &protocol.ApprovalRef{ID: "apr-1", Approver: "alice", Hash: "sha256:y"},
			Dispatch: &protocol.DispatchRef{ID: "dsp-1", Node: "node-1", Fence: 12},
			Result:   jsontext.Value(`{"output":"<b>ü</b>","exit_code":0}`), SupersededBy: &sup,
			ReceiptIndex: &idx, Receipt: jsontext.Value(`{"index":7}`), Proof: []string{"aa", "bb"}, Checkpoint: "cp\nline"},
		{IntentID: "int-2", State: "denied", Error: &protocol.ErrorBody{Code: "policy_denied", Message: "denied by p"}},
	} {
		b, err := jsonx.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var v1, v2 protocol.IntentResponse
		if err := jsonx.UnmarshalLenient(b, &v1); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &v2); err != nil {
			t.Fatalf("v2 refuses %s: %v", b, err)
		}
		if !reflect.DeepEqual(v1, v2) {
			t.Errorf("%s:\nv1 %+v\nv2 %+v", b, v1, v2)
		}
	}
}

// TestHungServerLeftBehind: a call to a server that never answers ends at
// the caller's deadline, and the next call starts with the next server,
// which answers.
func TestHungServerLeftBehind(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hung.Close()
	defer close(release)
	var answered atomic.Int64
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answered.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"intent_id":"int-1","state":"completed"}`))
	}))
	defer live.Close()
	c := NewCluster([]string{hung.URL, live.URL}, "")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := c.Submit(ctx, []byte(`{}`), nil, 0)
	cancel()
	if err == nil {
		t.Fatal("the hung server answered")
	}
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.Submit(ctx, []byte(`{}`), nil, 0)
	if err != nil || r.IntentID != "int-1" || answered.Load() != 1 {
		t.Fatalf("the second call: %+v %v (the live server answered %d times)", r, err, answered.Load())
	}
}
