package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/protocol"
)

func TestBatchEncoding(t *testing.T) {
	t.Parallel()
	items := []batchItem{{Source: "127.0.0.1", Body: []byte(`{"intent":{}}`)}, {Source: "2001:db8::/64", Body: nil}, {Source: "", Body: []byte{0, 1, 2}}}
	got, err := decodeBatch(encodeBatch(items))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(items) {
		t.Fatalf("%d items, want %d", len(got), len(items))
	}
	for i := range items {
		if got[i].Source != items[i].Source || !bytes.Equal(got[i].Body, items[i].Body) {
			t.Fatalf("item %d: %+v, want %+v", i, got[i], items[i])
		}
	}
	as := []batchAnswer{{Status: 200, Body: []byte(`{"intent_id":"a"}`)}, {Status: 429, RetryAfter: 1, Body: []byte(`{}`)}}
	gotA, err := decodeAnswers(encodeAnswers(as), len(as))
	if err != nil {
		t.Fatal(err)
	}
	for i := range as {
		if gotA[i].Status != as[i].Status || gotA[i].RetryAfter != as[i].RetryAfter || !bytes.Equal(gotA[i].Body, as[i].Body) {
			t.Fatalf("answer %d: %+v, want %+v", i, gotA[i], as[i])
		}
	}

	// Strict: a wrong magic, a missing or extra byte, no items, too many
	// items, a count other than asked for, a status that is none.
	enc := encodeBatch(items)
	tooMany := make([]batchItem, batchMaxItems+1)
	bad := map[string][]byte{
		"empty":        nil,
		"magic":        append([]byte("WFB2"), enc[4:]...),
		"truncated":    enc[:len(enc)-1],
		"trailing":     append(append([]byte{}, enc...), 0),
		"no items":     encodeBatch(nil),
		"too many":     encodeBatch(tooMany),
		"long length":  append(append([]byte{}, batchRequestMagic...), 1, 0xff, 0xff, 0xff, 0xff, 0x0f),
		"answer magic": encodeAnswers(as),
	}
	for name, b := range bad {
		if _, err := decodeBatch(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	encA := encodeAnswers(as)
	for name, b := range map[string][]byte{
		"count":     encA,
		"truncated": encA[:len(encA)-1],
		"status":    encodeAnswers([]batchAnswer{{Status: 99}, {Status: 200}}),
		"retry":     encodeAnswers([]batchAnswer{{Status: 200, RetryAfter: 3601}, {Status: 200}}),
		"request":   enc,
	} {
		want := len(as)
		if name == "count" {
			want = 3
		}
		if _, err := decodeAnswers(b, want); err == nil {
			t.Errorf("answers %s: decoded", name)
		}
	}
}

func FuzzDecodeBatch(f *testing.F) {
	f.Add(encodeBatch([]batchItem{{Source: "127.0.0.1", Body: []byte(`{"intent":{}}`)}}))
	f.Add(encodeBatch([]batchItem{{}, {Source: "x"}}))
	f.Add([]byte("WFB1\x01\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		items, err := decodeBatch(b)
		if err != nil {
			return
		}
		if len(items) == 0 || len(items) > batchMaxItems {
			t.Fatalf("%d items decoded", len(items))
		}
		// What decodes is exactly what encodes to the same bytes.
		if !bytes.Equal(encodeBatch(items), b) {
			t.Fatal("decoded items encode to other bytes")
		}
	})
}

func FuzzDecodeAnswers(f *testing.F) {
	f.Add(encodeAnswers([]batchAnswer{{Status: 200, Body: []byte(`{}`)}}), 1)
	f.Add(encodeAnswers([]batchAnswer{{Status: 429, RetryAfter: 1}, {Status: 503}}), 2)
	f.Fuzz(func(t *testing.T, b []byte, want int) {
		as, err := decodeAnswers(b, want)
		if err != nil {
			return
		}
		if len(as) != want {
			t.Fatalf("%d answers, asked for %d", len(as), want)
		}
		for _, a := range as {
			if a.Status < 100 || a.Status > 599 || a.RetryAfter < 0 || a.RetryAfter > 3600 {
				t.Fatalf("answer out of range: %+v", a)
			}
		}
		if !bytes.Equal(encodeAnswers(as), b) {
			t.Fatal("decoded answers encode to other bytes")
		}
	})
}

// TestBatcherGroups: a submission goes at once while fewer than
// batchesInFlight batches are at the leader; the ones arriving after that wait
// and go together in the next batch, each getting its own answer.
func TestBatcherGroups(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	b := &batcher{s: &Server{metrics: &metrics{forwardBatch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x"})}}}
	b.leader = func() (string, bool) { return "leader", true }
	b.rt = func(_ string, batch []*pendingItem) roundTripResult {
		mu.Lock()
		sizes = append(sizes, len(batch))
		mu.Unlock()
		<-release
		as := make([]batchAnswer, len(batch))
		for i, p := range batch {
			as[i] = batchAnswer{Status: 200, Body: append([]byte("answer to "), p.item.Body...)}
		}
		return roundTripResult{answers: as, index: 7}
	}
	const first, queued = batchesInFlight, 10
	var wg sync.WaitGroup
	answers := make([]batchAnswer, first+queued)
	submit := func(i int) {
		defer wg.Done()
		a, idx, err := b.forward(context.Background(), batchItem{Body: fmt.Appendf(nil, "%d", i)})
		if err != nil || idx != 7 {
			t.Errorf("item %d: index %d, %v", i, idx, err)
		}
		answers[i] = a
	}
	waitSizes := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			mu.Lock()
			got := len(sizes)
			mu.Unlock()
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d batches sent, want %d", got, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for i := range first {
		wg.Add(1)
		go submit(i)
		waitSizes(i + 1)
	}
	for i := first; i < first+queued; i++ {
		wg.Add(1)
		go submit(i)
	}
	// All queued behind the batches in flight.
	for deadline := time.Now().Add(10 * time.Second); ; {
		b.mu.Lock()
		n := len(b.pending)
		b.mu.Unlock()
		if n == queued {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pending, want %d", n, queued)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	want := []int{1, 1, 1, 1, queued}
	if fmt.Sprint(sizes) != fmt.Sprint(want) {
		t.Fatalf("batch sizes %v, want %v", sizes, want)
	}
	for i, a := range answers {
		if string(a.Body) != fmt.Sprintf("answer to %d", i) {
			t.Fatalf("item %d got %q", i, a.Body)
		}
	}
}

// fakeLeader is a batcher's leader for tests: batches sent to it wait until
// released, and it records their sizes by leader.
type fakeLeader struct {
	mu      sync.Mutex
	api     string
	sent    map[string][]int
	release chan struct{}
}

func newFakeLeader(b *batcher, api string) *fakeLeader {
	f := &fakeLeader{api: api, sent: map[string][]int{}, release: make(chan struct{})}
	b.leader = func() (string, bool) { f.mu.Lock(); defer f.mu.Unlock(); return f.api, f.api != "" }
	b.rt = func(api string, batch []*pendingItem) roundTripResult {
		f.mu.Lock()
		f.sent[api] = append(f.sent[api], len(batch))
		f.mu.Unlock()
		<-f.release
		as := make([]batchAnswer, len(batch))
		for i := range as {
			as[i] = batchAnswer{Status: 200, Body: []byte(api)}
		}
		return roundTripResult{answers: as}
	}
	return f
}

func (f *fakeLeader) batches(api string) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent[api])
}

func (f *fakeLeader) set(api string) { f.mu.Lock(); f.api = api; f.mu.Unlock() }

func pendingCount(b *batcher) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

// TestBatcherQueue: a submission whose client goes away before its batch
// leaves is dropped from the queue; the queue is bounded (past it, at once,
// errQueueFull); batches hung at a leader that lost its place do not hold up
// the new leader's; with no leader, what waits is answered no_leader.
func TestBatcherQueue(t *testing.T) {
	t.Parallel()
	b := &batcher{s: &Server{metrics: &metrics{forwardBatch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x"})}}, maxPending: 3}
	f := newFakeLeader(b, "a")
	type answer struct {
		a   batchAnswer
		err error
	}
	submit := func(ctx context.Context) chan answer {
		out := make(chan answer, 1)
		go func() {
			a, _, err := b.forward(ctx, batchItem{Body: []byte("x")})
			out <- answer{a, err}
		}()
		return out
	}
	var hung []chan answer
	for i := range batchesInFlight {
		hung = append(hung, submit(context.Background()))
		eventually.True(t, "a batch to leave", func() bool { return len(f.batches("a")) == i+1 })
	}
	gone, cancel := context.WithCancel(context.Background())
	cancelled := submit(gone)
	kept := []chan answer{submit(context.Background()), submit(context.Background())}
	eventually.True(t, "three queued", func() bool { return pendingCount(b) == 3 })
	if _, _, err := b.forward(context.Background(), batchItem{Body: []byte("x")}); err != errQueueFull {
		t.Fatalf("a fourth in a queue of 3: %v, want errQueueFull", err)
	}
	cancel()
	if a := <-cancelled; a.err != context.Canceled {
		t.Fatalf("cancelled submission: %+v", a)
	}

	// The leader changes: the queue goes to the new one at once, without the
	// cancelled submission, while a's batches still hang.
	f.set("b")
	b.mu.Lock()
	b.flushLocked()
	b.mu.Unlock()
	eventually.True(t, "a batch to b", func() bool { return len(f.batches("b")) == 1 })
	if got := f.batches("b"); got[0] != 2 {
		t.Fatalf("the batch to the new leader has %d submissions, want 2 (the cancelled one dropped)", got[0])
	}

	// No leader: a new submission is answered no_leader at once.
	f.set("")
	if a, _, err := b.forward(context.Background(), batchItem{Body: []byte("x")}); err != nil || a.Status != http.StatusServiceUnavailable {
		t.Fatalf("with no leader: %+v %v, want 503", a, err)
	}
	close(f.release)
	for _, c := range append(hung, kept...) {
		if a := <-c; a.err != nil || a.a.Status != 200 {
			t.Fatalf("answer %+v", a)
		}
	}
	// A batch's slot is given back just after its answers (send).
	eventually.True(t, "the slots to be given back", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.inFlight) == 0 })
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.inFlight) != 0 || len(b.pending) != 0 || b.bytes != 0 {
		t.Fatalf("after everything: in flight %v, %d pending, %d bytes", b.inFlight, len(b.pending), b.bytes)
	}
}

// TestBatcherQueueAfterLeaderChange: cancelled submissions do not count
// toward the queue's bound, and a queue that is full while the old leader's
// batches hang moves to a new leader when the next submission arrives,
// instead of answering 429 until the old batches time out.
func TestBatcherQueueAfterLeaderChange(t *testing.T) {
	t.Parallel()
	b := &batcher{s: &Server{metrics: &metrics{forwardBatch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x"})}}, maxPending: 2}
	f := newFakeLeader(b, "a")
	defer close(f.release)
	for i := range batchesInFlight {
		go b.forward(context.Background(), batchItem{Body: []byte("x")})
		eventually.True(t, "a batch to leave", func() bool { return len(f.batches("a")) == i+1 })
	}
	gone, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	for range 2 {
		go func() { _, _, err := b.forward(gone, batchItem{Body: []byte("x")}); done <- err }()
	}
	eventually.True(t, "two queued", func() bool { return pendingCount(b) == 2 })
	cancel()
	<-done
	<-done
	// Two cancelled in a queue of 2: room for two more.
	for range 2 {
		go b.forward(context.Background(), batchItem{Body: []byte("x")})
	}
	eventually.True(t, "two live queued", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.live == 2 })
	if _, _, err := b.forward(context.Background(), batchItem{Body: []byte("x")}); err != errQueueFull {
		t.Fatalf("a third live submission in a queue of 2: %v", err)
	}
	// A new leader: the next submission finds room, the queue having left for it.
	f.set("b")
	go b.forward(context.Background(), batchItem{Body: []byte("x")})
	eventually.True(t, "the queue and the new one to go to b", func() bool { return len(f.batches("b")) == 2 })
	if got := f.batches("b"); !slices.Contains(got, 2) || !slices.Contains(got, 1) {
		t.Fatalf("batches to b %v, want the 2 queued together and the new one", got)
	}
}

// TestBatcherRemembersOlderLeader: after a leader answered 404, submissions
// go alone (errNoBatches at once) for a while.
func TestBatcherRemembersOlderLeader(t *testing.T) {
	t.Parallel()
	b := &batcher{s: &Server{metrics: &metrics{forwardBatch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x"})}}}
	b.leader = func() (string, bool) { return "old", true }
	calls := 0
	b.rt = func(string, []*pendingItem) roundTripResult { calls++; return roundTripResult{err: errNoBatches} }
	for range 3 {
		if _, _, err := b.forward(context.Background(), batchItem{Body: []byte("x")}); err != errNoBatches {
			t.Fatalf("got %v, want errNoBatches", err)
		}
	}
	if calls != 1 {
		t.Fatalf("the older leader was sent %d batches, want 1", calls)
	}
}

// TestBatchToOlderLeader: a leader without the batch endpoint answers 404,
// which sends the caller back to forwarding alone.
func TestBatchToOlderLeader(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, protocol.CodeNotFound, "no such endpoint")
	}))
	defer srv.Close()
	s := &Server{log: slog.New(slog.DiscardHandler), cluster: &cluster{http: srv.Client()}}
	b := &batcher{s: s}
	res := b.roundTrip(srv.Listener.Addr().String(), []*pendingItem{{item: batchItem{Body: []byte("{}")}}})
	if res.err != errNoBatches {
		t.Fatalf("roundTrip to an older leader: %+v", res)
	}
}
