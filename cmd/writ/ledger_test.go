package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/writhq/writ/ledger"
)

// fakeLedgerServer serves, one GET after another, the checkpoints of the
// (log, size) steps it is given, and consistency proofs from the log of the
// current step: a server that can be made to lie.
type fakeLedgerServer struct {
	mu    sync.Mutex
	steps []fakeStep
	next  int
}

type fakeStep struct {
	log  *ledger.Log
	size int64
	note []byte
}

func newLog(t *testing.T, leaves ...string) *ledger.Log {
	t.Helper()
	l, err := ledger.Open(context.Background(), ledger.NewMemStore(), ledger.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, leaf := range leaves {
		if _, err := l.Append([]byte(leaf)); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func (f *fakeLedgerServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/v1/ledger/checkpoint":
		if f.next < len(f.steps)-1 {
			f.next++
		}
		s := f.steps[f.next]
		json.NewEncoder(w).Encode(map[string]any{"checkpoint": string(s.note), "size": s.size})
	case "/v1/ledger/consistency":
		from, _ := strconv.ParseInt(r.URL.Query().Get("from"), 10, 64)
		to, _ := strconv.ParseInt(r.URL.Query().Get("to"), 10, 64)
		proof, err := f.steps[f.next].log.ConsistencyProof(from, to)
		if err != nil {
			http.Error(w, `{"error":{"code":"not_found","message":"x"}}`, 404)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"from": from, "to": to, "proof": proof})
	default:
		http.NotFound(w, r)
	}
}

// TestLedgerWatch: watch accepts a log that grows, and exits 1 on a rollback
// and on a split view (another history of the same size).
func TestLedgerWatch(t *testing.T) {
	signer, vkey, err := ledger.NewSigner("writ.test/watch", make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	honest := newLog(t, "a", "b", "c", "d", "e")
	forked := newLog(t, "a", "b", "c", "X", "Y")
	step := func(l *ledger.Log, size int64) fakeStep {
		root, err := l.Root(size)
		if err != nil {
			t.Fatal(err)
		}
		note, err := ledger.SignCheckpoint(ledger.Checkpoint{Origin: signer.Name(), Size: size, Root: root}, signer)
		if err != nil {
			t.Fatal(err)
		}
		return fakeStep{log: l, size: size, note: note}
	}
	for _, c := range []struct {
		name     string
		steps    []fakeStep
		wantCode int
		wantErr  string
		lines    int
	}{
		{"grows", []fakeStep{{}, step(honest, 3), step(honest, 5)}, 0, "", 2},
		{"rollback", []fakeStep{{}, step(honest, 5), step(honest, 3)}, 1, "rollback", 1},
		{"split view", []fakeStep{{}, step(honest, 5), step(forked, 5)}, 1, "inconsistent", 1},
		// A fork is consistent with the common prefix; it shows as soon as
		// the watcher is shown the other history too.
		{"fork after a common prefix", []fakeStep{{}, step(honest, 3), step(forked, 5), step(honest, 5)}, 1, "inconsistent", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(&fakeLedgerServer{steps: c.steps})
			defer srv.Close()
			count := strconv.Itoa(len(c.steps) - 1)
			out, code := run(t, "", "ledger", "watch", "--server", srv.URL, "--key", vkey, "--interval", "10ms", "--count", count)
			lines := strings.Count(out, `"consistent":true`)
			if code != c.wantCode || lines != c.lines || (c.wantErr != "" && !strings.Contains(out, c.wantErr)) {
				t.Fatalf("got exit %d, %d good lines: %s; want exit %d, %d lines, %q", code, lines, out, c.wantCode, c.lines, c.wantErr)
			}
		})
	}
}
