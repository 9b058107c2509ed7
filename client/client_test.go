package client

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
