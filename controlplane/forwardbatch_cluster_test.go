package controlplane_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/controlplane/localcluster"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/protocol"
)

// TestForwardedInBatches runs a 3-server cluster in this process and submits
// to the followers concurrently: every submission is answered as the leader
// would have answered it alone (admitted, the same id for a repeated key, a
// bad signature refused and counted against its source at the follower), and
// the followers forwarded them in batches.
func TestForwardedInBatches(t *testing.T) {
	testtier.Slow(t, "a cluster of three servers")
	dir := t.TempDir()
	base := controlplane.DefaultConfig()
	base.Logger = slog.New(slog.DiscardHandler)
	// Failures are counted, not forgiven, while the test looks: at the default
	// 5 a second, a slow round trip refilled the token it checks.
	base.FailuresPerSecond = 0.001
	// Three servers in this process under -race on a loaded machine starve
	// for longer than Raft's defaults allow (a leader's 500 ms lease, a
	// follower's 1 s heartbeat timeout), and change leader again and again
	// while the test looks: 5 s each, as the test is about batches, not
	// elections.
	controlplane.SetRaftTimeouts(&base, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lc, err := localcluster.Start(ctx, dir, 3, base)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	servers, creds := lc.Servers, lc.Creds
	leader, followers := clusterRoles(ctx, t, servers)
	if err := localcluster.AddBenchNode(ctx, leader); err != nil {
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
		controlplane.ObserveLeaderChanges(s, func() { leaderChanges.Add(1) })
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
		t.Logf("round %d: a server's leader changed %d times (the leader was %s); again with new intents", round, leaderChanges.Load()-changes, localcluster.ID(leader))
		leader, followers = clusterRoles(ctx, t, servers)
	}
	// Bodies for the requests below, which must be refused before they are
	// read as submissions.
	same := sign("refused", "refused", secret)
	forged := sign("refused-forged", "refused-forged", []byte("not the orchestrator's secret, 32b"))
	// Only a server may send a batch.
	plain := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := plain.Post("https://"+leader.Addr().String()+controlplane.BatchPath, "application/octet-stream",
		bytes.NewReader(controlplane.EncodeBatchItem("1.2.3.4", same)))
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
	for _, p := range []string{controlplane.BatchPath, "/v1/internal/apply", "/v1//internal/apply", "/v1/./internal/submit-batch", "/v1/%2569nternal/apply", "/v1/%69nternal/apply"} {
		body := controlplane.EncodeBatchItem("203.0.113.7", forged)
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
	for _, p := range []string{"/v1/internal/apply", controlplane.BatchPath} {
		req, _ := http.NewRequest(http.MethodPost, "https://"+leader.Addr().String()+p, strings.NewReader(`{}`))
		req.Header.Set(controlplane.HeaderForwardedFor, "198.51.100.1")
		resp, err := controlplane.PeerClient(followers[0]).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s at the leader, forwarded for a client: HTTP %d, want 401", p, resp.StatusCode)
		}
	}
	time.Sleep(200 * time.Millisecond)
	victim := controlplane.FailureSourceTracked(leader, "203.0.113.7")
	session := controlplane.HasDashboardSession(leader, protocol.HashBytes([]byte("chosen")))
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
// loopback source.
func failures(s *controlplane.Server) int { return controlplane.FailuresOf(s, "127.0.0.1") }

// clusterRoles waits until one of servers leads, and returns it and the
// others.
func clusterRoles(ctx context.Context, t *testing.T, servers []*controlplane.Server) (*controlplane.Server, []*controlplane.Server) {
	t.Helper()
	leader, err := localcluster.WaitLeader(ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	var followers []*controlplane.Server
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
func forwardRound(ctx context.Context, round int, leader *controlplane.Server, followers []*controlplane.Server, caPEM, secret []byte,
	sign func(id, key string, secret []byte, params ...string) []byte) (string, error) {
	var clients []*client.Client
	for _, s := range followers {
		c := client.New("https://"+s.Addr().String(), "")
		if err := c.TrustCA(caPEM); err != nil {
			return "", err
		}
		clients = append(clients, c)
	}
	all := append([]*controlplane.Server{leader}, followers...)
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
	req, _ := http.NewRequest(http.MethodPost, "https://"+leader.Addr().String()+controlplane.BatchPath,
		bytes.NewReader(controlplane.EncodeBatchItem("127.0.0.1", submissionOf(sign(indexed, indexed, secret)))))
	req.Header.Set(controlplane.HeaderForwardedFor, "batch")
	iresp, err := controlplane.PeerClient(followers[0]).Do(req)
	if err != nil {
		return "", err
	}
	iresp.Body.Close()
	idx, _ := strconv.ParseUint(iresp.Header.Get(controlplane.HeaderIndex), 10, 64)
	if at, ok := controlplane.IntentIndex(leader, indexed); !ok || idx == 0 || idx < at {
		return "", fmt.Errorf("batch answered with index %q; the intent (found %v) is at %d", iresp.Header.Get(controlplane.HeaderIndex), ok, at)
	}
	return fmt.Sprintf("%d submissions in %d batches (%d of them resent)", items-items0, batches-batches0, resent.Load()), nil
}

// forwardedInBatches sums what servers forwarded in batches: the
// submissions, and the batches that carried them.
func forwardedInBatches(servers []*controlplane.Server) (items, batches uint64, err error) {
	for _, s := range servers {
		i, b, err := controlplane.ForwardedInBatches(s)
		if err != nil {
			return 0, 0, err
		}
		items, batches = items+i, batches+b
	}
	return items, batches, nil
}

// waitBatchersIdle waits until no submission waits for a batch at any of
// servers and no batch is in flight: every batch sent has been counted.
func waitBatchersIdle(ctx context.Context, servers []*controlplane.Server) error {
	for {
		idle := true
		for _, s := range servers {
			idle = idle && controlplane.BatcherIdle(s)
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
