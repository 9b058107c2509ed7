package controlplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

func TestBatchEncoding(t *testing.T) {
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

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

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
		eventually(t, "a batch to leave", func() bool { return len(f.batches("a")) == i+1 })
	}
	gone, cancel := context.WithCancel(context.Background())
	cancelled := submit(gone)
	kept := []chan answer{submit(context.Background()), submit(context.Background())}
	eventually(t, "three queued", func() bool { return pendingCount(b) == 3 })
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
	eventually(t, "a batch to b", func() bool { return len(f.batches("b")) == 1 })
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
	eventually(t, "the slots to be given back", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.inFlight) == 0 })
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
	b := &batcher{s: &Server{metrics: &metrics{forwardBatch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x"})}}, maxPending: 2}
	f := newFakeLeader(b, "a")
	defer close(f.release)
	for i := range batchesInFlight {
		go b.forward(context.Background(), batchItem{Body: []byte("x")})
		eventually(t, "a batch to leave", func() bool { return len(f.batches("a")) == i+1 })
	}
	gone, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	for range 2 {
		go func() { _, _, err := b.forward(gone, batchItem{Body: []byte("x")}); done <- err }()
	}
	eventually(t, "two queued", func() bool { return pendingCount(b) == 2 })
	cancel()
	<-done
	<-done
	// Two cancelled in a queue of 2: room for two more.
	for range 2 {
		go b.forward(context.Background(), batchItem{Body: []byte("x")})
	}
	eventually(t, "two live queued", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.live == 2 })
	if _, _, err := b.forward(context.Background(), batchItem{Body: []byte("x")}); err != errQueueFull {
		t.Fatalf("a third live submission in a queue of 2: %v", err)
	}
	// A new leader: the next submission finds room, the queue having left for it.
	f.set("b")
	go b.forward(context.Background(), batchItem{Body: []byte("x")})
	eventually(t, "the queue and the new one to go to b", func() bool { return len(f.batches("b")) == 2 })
	if got := f.batches("b"); !slices.Contains(got, 2) || !slices.Contains(got, 1) {
		t.Fatalf("batches to b %v, want the 2 queued together and the new one", got)
	}
}

// TestBatcherRemembersOlderLeader: after a leader answered 404, submissions
// go alone (errNoBatches at once) for a while.
func TestBatcherRemembersOlderLeader(t *testing.T) {
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

// TestForwardedInBatches runs a 3-server cluster in this process and submits
// to the followers concurrently: every submission is answered as the leader
// would have answered it alone (admitted, the same id for a repeated key, a
// bad signature refused and counted against its source at the follower), and
// the followers forwarded them in batches.
func TestForwardedInBatches(t *testing.T) {
	dir := t.TempDir()
	base := DefaultConfig()
	base.Logger = slog.New(slog.DiscardHandler)
	// Failures are counted, not forgiven, while the test looks: at the default
	// 5 a second, a slow round trip refilled the token it checks.
	base.FailuresPerSecond = 0.001
	// Three servers in this process under -race on a loaded machine starve
	// for longer than Raft's defaults allow (a leader's 500 ms lease, a
	// follower's 1 s heartbeat timeout), and change leader again and again
	// while the test looks: 5 s each, as the test is about batches, not
	// elections.
	base.raftTimeouts = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	servers, creds, err := StartLocalCluster(ctx, dir, 3, base)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range servers {
			s.Close(context.Background())
		}
	}()
	leader, followers := clusterRoles(ctx, t, servers)
	if err := leader.AddBenchNode(ctx); err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "pki", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	secret, _ := base64.StdEncoding.DecodeString(creds.Orchestrator.Secret)
	sign := func(id, key string, secret []byte, params ...string) []byte {
		p := `{"msg":"hi"}`
		if len(params) > 0 {
			p = params[0]
		}
		now := time.Now().UTC()
		in := &protocol.Intent{
			Type: "writ.intent/v1", ID: id, Tenant: creds.Tenant, Principal: "p", RunID: "r", Tool: "echo",
			Params: jsontext.Value(p), IdempotencyKey: key, IssuedAt: protocol.FormatTime(now),
			ExpiresAt: protocol.FormatTime(now.Add(5 * time.Minute)), KeyID: creds.Orchestrator.KeyID,
		}
		if err := in.SetPayloadHash(); err != nil {
			t.Fatal(err)
		}
		if err := in.Sign(secret); err != nil {
			t.Fatal(err)
		}
		b, _ := jsonx.Marshal(in)
		return b
	}

	// Should the leader still lose its place (its followers' answers later
	// than its lease, or its heartbeats later than theirs), the followers
	// answer no_leader, as a lone forward would. What the test checks needs
	// one leader throughout: a round in which a server's leader changed
	// (Raft's own observation, not a sample) proves nothing either way and
	// runs again, with new intents, under the leader of the moment. A round
	// that fails while every server kept its leader fails the test.
	var leaderChanges atomic.Int64
	for _, s := range servers {
		s.node.Raft.RegisterObserver(raft.NewObserver(nil, false, func(o *raft.Observation) bool {
			if _, ok := o.Data.(raft.LeaderObservation); ok {
				leaderChanges.Add(1)
			}
			return false
		}))
	}
	const rounds = 5
	for round := 1; ; round++ {
		changes := leaderChanges.Load()
		got, err := forwardRound(ctx, round, leader, followers, caPEM, secret, sign)
		if err == nil {
			t.Logf("round %d: %s", round, got)
			break
		}
		if leaderChanges.Load() == changes {
			t.Fatal(err)
		}
		if round == rounds {
			t.Fatalf("a server's leader changed in each of %d rounds; the last one's errors:\n%v", rounds, err)
		}
		t.Logf("round %d: a server's leader changed %d times (the leader was %s); again with new intents", round, leaderChanges.Load()-changes, leader.cfg.ID)
		leader, followers = clusterRoles(ctx, t, servers)
	}
	// Bodies for the requests below, which must be refused before they are
	// read as submissions.
	same := sign("refused", "refused", secret)
	forged := sign("refused-forged", "refused-forged", []byte("not the orchestrator's secret, 32b"))
	// Only a server may send a batch.
	plain := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := plain.Post("https://"+leader.Addr().String()+batchPath, "application/octet-stream",
		bytes.NewReader(encodeBatch([]batchItem{{Source: "1.2.3.4", Body: same}})))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a batch from a client that is no server: HTTP %d", resp.StatusCode)
	}
	// Nor through a follower, which must not forward internal requests with
	// its own certificate: a batch naming a victim's address, a relayed
	// command opening an admin dashboard session, under any spelling.
	for _, p := range []string{batchPath, "/v1/internal/apply", "/v1//internal/apply", "/v1/./internal/submit-batch", "/v1/%2569nternal/apply", "/v1/%69nternal/apply"} {
		body := encodeBatch([]batchItem{{Source: "203.0.113.7", Body: forged}})
		if !strings.Contains(p, "batch") {
			body = fmt.Appendf(nil, `{"type":50,"cmd":{"hash":%q,"user":"admin-token","expires_at":"2099-01-01T00:00:00Z"}}`, protocol.HashBytes([]byte("chosen")))
		}
		resp, err := plain.Post("https://"+followers[0].Addr().String()+p, "application/octet-stream", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			t.Fatalf("%s at a follower from a client that is no server: HTTP %d", p, resp.StatusCode)
		}
	}
	// Defence in depth: the leader's internal endpoints refuse a request a
	// follower forwarded for a client (it names the client), even over a
	// server's certificate.
	for _, p := range []string{"/v1/internal/apply", batchPath} {
		req, _ := http.NewRequest(http.MethodPost, "https://"+leader.Addr().String()+p, strings.NewReader(`{}`))
		req.Header.Set(headerForwardedFor, "198.51.100.1")
		resp, err := followers[0].cluster.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s at the leader, forwarded for a client: HTTP %d, want 401", p, resp.StatusCode)
		}
	}
	time.Sleep(200 * time.Millisecond)
	leader.fails.mu.Lock()
	_, victim := leader.fails.sources["203.0.113.7"]
	leader.fails.mu.Unlock()
	_, session := leader.fsm.Session(protocol.HashBytes([]byte("chosen")))
	if victim || session {
		t.Fatalf("internal requests through a follower reached the leader: victim's source counted %v, admin session opened %v", victim, session)
	}
}

// submissionOf is the body of a submission of intent.
func submissionOf(intent []byte) []byte {
	return append(append([]byte(`{"intent":`), intent...), '}')
}

func isCode(err error, code protocol.Code) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Code == code
}

// failures is how many failures the server's limiter has counted against the
// loopback source: its burst minus the tokens left.
func failures(s *Server) int {
	s.fails.mu.Lock()
	defer s.fails.mu.Unlock()
	fs := s.fails.sources["127.0.0.1"]
	if fs == nil {
		return 0
	}
	return s.fails.burst - int(fs.lim.Tokens()+0.5)
}

// clusterRoles waits until one of servers leads, and returns it and the
// others.
func clusterRoles(ctx context.Context, t *testing.T, servers []*Server) (*Server, []*Server) {
	t.Helper()
	leader, err := waitClusterLeader(ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	var followers []*Server
	for _, s := range servers {
		if s != leader {
			followers = append(followers, s)
		}
	}
	return leader, followers
}

// forwardRound is one round of TestForwardedInBatches: 96 submissions and a
// repeated intent sent to the followers at once, a second payload under one
// key, a forged intent, a submission that waits, then the count of what the
// followers forwarded in batches and the index a batch's answer names. Its
// intents' ids start with the round's number. It returns what the
// followers forwarded, or every failure.
func forwardRound(ctx context.Context, round int, leader *Server, followers []*Server, caPEM, secret []byte,
	sign func(id, key string, secret []byte, params ...string) []byte) (string, error) {
	var clients []*client.Client
	for _, s := range followers {
		c := client.New("https://"+s.Addr().String(), "")
		if err := c.TrustCA(caPEM); err != nil {
			return "", err
		}
		clients = append(clients, c)
	}
	all := append([]*Server{leader}, followers...)
	name := func(s string) string { return fmt.Sprintf("r%d-%s", round, s) }
	// What the followers forwarded before this round, once the batches of
	// an earlier round have all been counted.
	if err := waitBatchersIdle(ctx, all); err != nil {
		return "", err
	}
	items0, batches0, err := forwardedInBatches(all)
	if err != nil {
		return "", err
	}

	// A loaded machine sheds what it cannot serve in time, as it is built
	// to: a connection whose TLS handshake waited past its 5 s is closed
	// (the client sees it reset), a batch whose round trip to the leader
	// failed is answered no_leader, a full queue 429. A client sends the
	// same signed intent again then, and so does this test; each resend
	// may have been forwarded once more, so the count of forwarded
	// submissions below allows one more per resend.
	// At most 32 submissions are in flight at once (16 a follower), each on
	// a connection of its own: enough to keep every follower's 4 batches
	// busy and the next one filling, while 100 TLS handshakes at once under
	// -race would outlast the servers' 5 s handshake bound on a loaded
	// machine, and be shed.
	var resent atomic.Int64
	inFlight := make(chan struct{}, 32)
	submit := func(c *client.Client, body []byte, wait time.Duration) (*client.IntentResponse, error) {
		for {
			inFlight <- struct{}{}
			r, err := c.Submit(ctx, body, nil, wait)
			<-inFlight
			var ae *client.Error
			if err == nil || ctx.Err() != nil || errors.As(err, &ae) && ae.Code != "no_leader" && ae.Code != "overloaded" {
				return r, err
			}
			resent.Add(1)
			time.Sleep(100 * time.Millisecond)
		}
	}

	const n = 96
	var wg sync.WaitGroup
	errs := make(chan error, n+8)
	for i := range n {
		wg.Go(func() {
			id := name(fmt.Sprintf("batch-%d", i))
			resp, err := submit(clients[i%2], sign(id, id, secret), 0)
			switch {
			case err != nil:
				errs <- fmt.Errorf("%s: %w", id, err)
			case resp.IntentID != id || resp.State != "dispatched":
				errs <- fmt.Errorf("%s: answered %s %s", id, resp.IntentID, resp.State)
			}
		})
	}
	// One key, two payloads, both followers: one admitted, the other a
	// conflict; the same intent again gets the same id.
	same := sign(name("same-1"), name("same-key"), secret)
	for i := range 4 {
		wg.Go(func() {
			resp, err := submit(clients[i%2], same, 0)
			if err != nil || resp.IntentID != name("same-1") {
				errs <- fmt.Errorf("repeated intent: %v %+v", err, resp)
			}
		})
	}
	wg.Wait()
	close(errs)
	var failed []error
	for err := range errs {
		failed = append(failed, err)
	}
	if len(failed) > 0 {
		return "", errors.Join(failed...)
	}
	other := sign(name("same-2"), name("same-key"), secret, `{"msg":"other"}`)
	if _, err := submit(clients[1], other, 0); err == nil || !isCode(err, "idempotency_conflict") {
		return "", fmt.Errorf("a second payload under one key: %v", err)
	}

	// A forged intent: refused as it would be alone, and counted as an
	// authentication failure of its source at the follower.
	before := failures(followers[0])
	forged := sign(name("forged"), name("forged"), []byte("not the orchestrator's secret, 32b"))
	if _, err := submit(clients[0], forged, 0); !isCode(err, protocol.CodeBadSignature) {
		return "", fmt.Errorf("forged intent: %v", err)
	}
	if after := failures(followers[0]); after != before+1 {
		return "", fmt.Errorf("follower counted %d failures for its source, want %d", after, before+1)
	}

	// Waiting at a follower still works: the follower waits on its own FSM.
	waited, err := submit(clients[0], sign(name("waited"), name("waited"), secret), 2*time.Second)
	if err != nil || waited.IntentID != name("waited") {
		return "", fmt.Errorf("submission with wait: %v %+v", err, waited)
	}

	// A batch is counted once its answers are handed out: the count is read
	// when no batch is in flight.
	if err := waitBatchersIdle(ctx, all); err != nil {
		return "", err
	}
	items, batches, err := forwardedInBatches(all)
	if err != nil {
		return "", err
	}
	if want, got := uint64(n+4+3), items-items0; got < want || got > want+uint64(resent.Load()) {
		return "", fmt.Errorf("followers forwarded %d submissions in batches, want %d (and up to %d resent)", got, want, resent.Load())
	}

	// The leader's answer to a batch names its applied index, at least the
	// admission's, which a follower waits for before serving ?wait=.
	indexed := name("indexed")
	req, _ := http.NewRequest(http.MethodPost, "https://"+leader.Addr().String()+batchPath,
		bytes.NewReader(encodeBatch([]batchItem{{Source: "127.0.0.1", Body: submissionOf(sign(indexed, indexed, secret))}})))
	req.Header.Set(headerForwardedFor, "batch")
	iresp, err := followers[0].cluster.http.Do(req)
	if err != nil {
		return "", err
	}
	iresp.Body.Close()
	idx, _ := strconv.ParseUint(iresp.Header.Get(headerIndex), 10, 64)
	if in, ok := leader.fsm.Intent(indexed); !ok || idx == 0 || idx < in.Index {
		return "", fmt.Errorf("batch answered with index %q; the intent (found %v) is at %d", iresp.Header.Get(headerIndex), ok, in.Index)
	}
	return fmt.Sprintf("%d submissions in %d batches (%d of them resent)", items-items0, batches-batches0, resent.Load()), nil
}

// forwardedInBatches sums what servers forwarded in batches: the
// submissions, and the batches that carried them.
func forwardedInBatches(servers []*Server) (items, batches uint64, err error) {
	for _, s := range servers {
		var m dto.Metric
		if err := s.metrics.forwardBatch.Write(&m); err != nil {
			return 0, 0, err
		}
		items += uint64(m.GetHistogram().GetSampleSum())
		batches += m.GetHistogram().GetSampleCount()
	}
	return items, batches, nil
}

// waitBatchersIdle waits until no submission waits for a batch at any of
// servers and no batch is in flight: every batch sent has been counted.
func waitBatchersIdle(ctx context.Context, servers []*Server) error {
	for {
		idle := true
		for _, s := range servers {
			b := s.cluster.batches
			b.mu.Lock()
			idle = idle && b.live == 0 && len(b.inFlight) == 0
			b.mu.Unlock()
		}
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("the followers' batches were still in flight")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
