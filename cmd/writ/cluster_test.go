package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/writhq/writ/client"
	"github.com/writhq/writ/internal/faults"
)

// TestClusterOneKeyConcurrently: 64 concurrent submissions of one idempotency
// key, spread over the three servers (two of them forwarding to the leader),
// admit exactly one intent; every answer names it or is idempotency_conflict
// (for the submissions whose params differ from the winner's). The winner
// runs once on one of the two agents.
func TestClusterOneKeyConcurrently(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short: three writ servers and two agents")
	}
	c := startTestCluster(t)
	c.startAgents([]int{0, 1, 2}, []int{0, 1, 2})
	const n = 64
	ids := make([]string, n)
	got := make([]string, n)
	errs := make([]error, n)
	// Two payloads for one key: each counts its runs in its own file.
	file := func(i int) string {
		if i%8 == 7 {
			return "other"
		}
		return "same"
	}
	params := func(i int) string {
		b, _ := json.Marshal(map[string]string{"file": filepath.Join(c.witness, file(i))})
		return string(b)
	}
	bodies := make([][]byte, n)
	for i := range bodies {
		ids[i] = fmt.Sprintf("a-%d", i)
		bodies[i] = c.signIntent("witness", ids[i], "one-key", params(i), "")
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := c.client(i%3).Submit(ctx, bodies[i], nil, 0)
			if err == nil {
				got[i] = r.IntentID
			}
			errs[i] = err
		}()
	}
	close(start)
	wg.Wait()
	winner := ""
	for i := range got {
		var ae *client.Error
		switch {
		case errs[i] == nil && winner == "":
			winner = got[i]
		case errs[i] == nil && got[i] != winner:
			t.Fatalf("submission %d got intent %s, another got %s", i, got[i], winner)
		case errs[i] != nil && !(errors.As(errs[i], &ae) && ae.Code == "idempotency_conflict"):
			t.Fatalf("submission %d: %v", i, errs[i])
		}
	}
	w := -1
	for i, id := range ids {
		if id == winner {
			w = i
		}
	}
	if w < 0 {
		t.Fatalf("the answers name %q, which no submission had", winner)
	}
	for i := range got {
		same := params(i) == params(w)
		if same != (errs[i] == nil) {
			t.Errorf("submission %d (same params as the winner: %v): %v", i, same, errs[i])
		}
	}
	leader := c.waitLeader(10 * time.Second)
	c.waitCaughtUp(leader)
	// Each server holds the winner, and each attempt with other params
	// recorded rejected (idempotency_conflict, unbound); nothing else.
	for s := range c.srv {
		admitted := 0
		for i, id := range ids {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			r, err := c.client(s).Intent(ctx, id, 0)
			cancel()
			var ae *client.Error
			switch {
			case errors.As(err, &ae) && ae.Code == "not_found":
				if params(i) != params(w) {
					t.Errorf("%s: the conflicting attempt %s is not recorded", c.srv[s].id, id)
				}
			case err != nil:
				t.Fatal(err)
			case r.State == "rejected" && r.Error != nil && r.Error.Code == "idempotency_conflict" && params(i) != params(w):
			default:
				admitted++
			}
		}
		if admitted != 1 {
			t.Fatalf("%s holds %d intents of one key, want 1", c.srv[s].id, admitted)
		}
	}
	c.checkRuns(leader, c.waitFinal([]string{winner}, 30*time.Second), map[string]string{winner: file(w)})
	if loser := map[string]string{"same": "other", "other": "same"}[file(w)]; c.runs(loser) != 0 {
		t.Errorf("the tool ran %d times with the params that lost", c.runs(loser))
	}
}

// TestClusterLeaderKilled (issue 3, acceptance b; issue 4, acceptance f): two
// node agents run what three servers dispatch. A stream of 1,000 distinct
// allowed submissions of the witness tool (and, for a quarter of the keys, a
// second intent with the same key and payload) goes through a failover
// client while the leader is killed with SIGKILL — with dispatches in flight,
// and the sessions it held cut. Every acknowledged submission is present
// exactly once afterwards, no key holds two intents, and an unacknowledged
// one is absent or present once: porcupine checks the history against a
// register per key. Every admitted intent completes within a bounded wait,
// its tool ran exactly once (never twice for a key: the witness files), and
// each has exactly one receipt. Then the killed server comes back, catches
// up, and all three servers' checkpoints are consistent.
func TestClusterLeaderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short: three writ servers and two agents")
	}
	c := startTestCluster(t)
	const n, workers = 1000, 16
	leader := c.waitLeader(10 * time.Second)
	c.startAgents([]int{0, 1, 2}, []int{0, 1, 2})
	began := time.Now()
	var (
		mu      sync.Mutex
		history []porcupine.Operation
		acked   atomic.Int64
		next    atomic.Int64
		clock   = time.Now()
	)
	ts := func() int64 { return int64(time.Since(clock)) }
	submit := func(cl *client.Client, client int, key, id string) {
		body := c.witnessIntent(id, key, "", "")
		call := ts()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		r, err := cl.Submit(ctx, body, nil, 0)
		cancel()
		ret := ts()
		out := faults.Op{Key: key, ID: id}
		if err != nil {
			out.Unknown = true
			ret = math.MaxInt64
		} else {
			out.Answered = r.IntentID
			acked.Add(1)
		}
		mu.Lock()
		history = append(history, faults.Operation(client, faults.Op{Key: key, ID: id}, out, call, ret))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := c.client(-1)
			for {
				k := int(next.Add(1) - 1)
				if k >= n {
					return
				}
				key := fmt.Sprintf("k%04d", k)
				submit(cl, w, key, key+"-a")
				if k%4 == 0 {
					submit(cl, w, key, key+"-b")
				}
			}
		}()
	}
	for acked.Load() < n/4 {
		time.Sleep(5 * time.Millisecond)
	}
	nodes, _ := c.nodes(leader)
	c.kill(leader)
	wg.Wait()
	t.Logf("killed the leader %s (holding the sessions of %v) after %d acknowledged submissions, %s into the stream",
		c.srv[leader].id, nodes, n/4, time.Since(began).Round(time.Millisecond))
	unknown := 0
	for _, op := range history {
		if op.Output.(faults.Op).Unknown {
			unknown++
		}
	}
	t.Logf("%d submissions, %d acknowledged, %d without an answer", len(history), acked.Load(), unknown)
	if acked.Load() < int64(n) {
		t.Errorf("only %d of %d keys' submissions were acknowledged: the client did not fail over", acked.Load(), n)
	}
	// Bring the killed server back; it catches up from the others.
	c.start(leader)
	newLeader := c.waitLeader(30 * time.Second)
	c.waitCaughtUp(newLeader)
	keys := map[string]string{} // admitted intent → its key
	for k := 0; k < n; k++ {
		key := fmt.Sprintf("k%04d", k)
		ids := []string{key + "-a"}
		if k%4 == 0 {
			ids = append(ids, key+"-b")
		}
		var held []string
		for _, id := range ids {
			ok, err := c.exists(newLeader, id)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				held = append(held, id)
				keys[id] = key
			}
		}
		call := ts()
		history = append(history, faults.Operation(workers, faults.Op{Read: true, Key: key},
			faults.Op{Read: true, Key: key, Answered: strings.Join(held, ",")}, call, ts()))
	}
	res, info := porcupine.CheckOperationsVerbose(faults.IdempotencyModel.ToModel(), history, time.Minute)
	if res != porcupine.Ok {
		_ = info
		t.Fatalf("the idempotency history is not linearizable (%s): a key was admitted twice, or an acknowledged submission is missing", res)
	}
	// Every admitted intent ran once and ended: none is left dispatched.
	ids := make([]string, 0, len(keys))
	for id := range keys {
		ids = append(ids, id)
	}
	answers := c.waitFinal(ids, 90*time.Second)
	t.Logf("every admitted intent final %s after the stream began", time.Since(began).Round(time.Millisecond))
	c.checkRuns(newLeader, answers, keys)
	for k := 0; k < n; k++ {
		if key := fmt.Sprintf("k%04d", k); c.runs(key) > 1 {
			t.Errorf("key %s: the tool ran %d times", key, c.runs(key))
		}
	}
	// Every server holds the same intents.
	for s := range c.srv {
		for k := 0; k < n; k += 97 {
			id := fmt.Sprintf("k%04d-a", k)
			a, err1 := c.exists(s, id)
			b, err2 := c.exists(newLeader, id)
			if err1 != nil || err2 != nil || a != b {
				t.Fatalf("%s and the leader disagree about %s: %v %v (%v %v)", c.srv[s].id, id, a, b, err1, err2)
			}
		}
	}
	time.Sleep(500 * time.Millisecond) // a checkpoint of the last receipts
	c.waitCaughtUp(newLeader)
	c.checkLedgers()
}

// TestClusterPausedLeader: the leader is paused with SIGSTOP while
// submissions are sent to it; the others elect a new leader and go on (and
// the two agents, if one had its session with the paused server, move to
// another). When the old leader resumes, nothing it had taken in commits on
// its own: every submission it acknowledged is present exactly once on the
// new leader, and all servers hold the same intents. Every admitted intent
// ran once, completed and has one receipt.
func TestClusterPausedLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short: three writ servers and two agents")
	}
	c := startTestCluster(t)
	old := c.waitLeader(10 * time.Second)
	c.startAgents([]int{0, 1, 2}, []int{0, 1, 2})
	p := c.srv[old].cmd.Process
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	const n = 20
	type answer struct {
		id  string
		err error
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("p-%d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := c.client(old).Submit(ctx, c.witnessIntent(id, id, "", ""), nil, 0)
			if err == nil {
				answers[i] = answer{r.IntentID, nil}
			} else {
				answers[i] = answer{"", err}
			}
		}()
	}
	// The others elect a leader among themselves and admit.
	var others []int
	for i := range c.srv {
		if i != old {
			others = append(others, i)
		}
	}
	var newLeader int
	deadline := time.Now().Add(20 * time.Second)
	for {
		h, err := c.health(others[0])
		if l, _ := h["leader"].(string); err == nil && l != "" && l != c.srv[old].id {
			for i, s := range c.srv {
				if s.id == l {
					newLeader = i
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the others elected no new leader")
		}
		time.Sleep(100 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("q-%d", i)
		if _, err := c.client(others[i%2]).Submit(ctx, c.witnessIntent(id, id, "", ""), nil, 0); err != nil {
			t.Fatalf("submitting to the new cluster: %v", err)
		}
	}
	if err := p.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	c.waitLeader(20 * time.Second)
	c.waitCaughtUp(newLeader)
	ackd := 0
	for i, a := range answers {
		id := fmt.Sprintf("p-%d", i)
		on, err := c.exists(newLeader, id)
		if err != nil {
			t.Fatal(err)
		}
		var ae *client.Error
		if a.err != nil && !(errors.As(a.err, &ae) && ae.Code == "no_leader") {
			t.Errorf("%s: the resumed server answered %v, want an intent or no_leader", id, a.err)
		}
		if a.err == nil {
			ackd++
			if a.id != id || !on {
				t.Errorf("%s was acknowledged (as %q) by the resumed leader but the cluster does not hold it", id, a.id)
			}
		}
		for s := range c.srv {
			got, err := c.exists(s, id)
			if err != nil || got != on {
				t.Errorf("%s: %s holds it: %v, the leader: %v (%v)", id, c.srv[s].id, got, on, err)
			}
		}
	}
	t.Logf("the resumed server acknowledged %d of %d submissions taken while paused (through the new leader)", ackd, n)
	keys := map[string]string{}
	var ids []string
	for i := range n {
		id := fmt.Sprintf("p-%d", i)
		if on, err := c.exists(newLeader, id); err != nil {
			t.Fatal(err)
		} else if on {
			keys[id], ids = id, append(ids, id)
		}
	}
	for i := range 10 {
		id := fmt.Sprintf("q-%d", i)
		keys[id], ids = id, append(ids, id)
	}
	leader := c.waitLeader(20 * time.Second)
	c.checkRuns(leader, c.waitFinal(ids, 60*time.Second), keys)
	c.waitCaughtUp(leader)
	c.checkLedgers()
}
