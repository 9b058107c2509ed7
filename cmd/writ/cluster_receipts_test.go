package main_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/ledger"
	"github.com/writhq/writ/protocol"
)

// TestClusterReceiptsEqualAttempts is the ledger's acceptance on 3 servers:
// attempts of every kind — completed and failed runs on an agent, a policy
// denial, an unknown tool, an idempotency conflict (sent twice) and repeats
// of admitted attempts — are submitted to all three servers; afterwards the
// log holds exactly one receipt per authenticated attempt, with the outcome
// the attempt had, every receipt verifies against the latest checkpoint with
// the cluster's key, and the three servers hold the same log.
func TestClusterReceiptsEqualAttempts(t *testing.T) {
	testtier.Slow(t, "three writ servers")
	c := startTestCluster(t)
	c.waitLeader(10 * time.Second)
	c.startAgents([]int{0, 1, 2})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.client(-1).Admin(ctx, "PUT", "policy", []byte("@id(\"all\")\npermit (principal, action == Writ::Action::\"invoke\", resource) when { principal.tenant == \"acme\" };\n"+
		"@id(\"no-deny\")\nforbid (principal, action == Writ::Action::\"invoke\", resource) when { context.params has deny };\n")); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{} // intent id → outcome
	attempts := 0
	submit := func(i int, raw []byte) *client.IntentResponse {
		t.Helper()
		cl := c.client(i % len(c.srv))
		var r *client.IntentResponse
		var err error
		for try := 0; try < 50; try++ {
			sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			r, err = cl.Submit(sctx, raw, nil, 0)
			cancel()
			var ce *client.Error
			if err == nil || errors.As(err, &ce) && ce.Code == "idempotency_conflict" {
				return r
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("submit to %s: %v", c.srv[i%len(c.srv)].id, err)
		return nil
	}
	n := 0
	next := func() (string, string) { n++; return fmt.Sprintf("int-r%03d", n), fmt.Sprintf("key-r%03d", n) }
	for i := range 9 {
		id, key := next()
		submit(i, c.witnessIntent(id, key, "", ""))
		want[id], attempts = "completed", attempts+1
		// The same attempt again, to another server: no new receipt.
		submit(i+1, c.witnessIntent(id, key, "", ""))
	}
	for i := range 3 {
		id, key := next()
		submit(i, c.signIntent("witness", id, key, `{"file":"/nonexistent/witness"}`, ""))
		want[id], attempts = "failed", attempts+1
		id, key = next()
		submit(i, c.signIntent("witness", id, key, `{"file":"x","deny":true}`, ""))
		want[id], attempts = "denied", attempts+1
		id, key = next()
		submit(i, c.signIntent("no-such-tool", id, key, `{}`, ""))
		want[id], attempts = "rejected", attempts+1
		// Another payload under the first completed intent's key.
		id, _ = next()
		submit(i, c.signIntent("witness", id, "key-r001", `{"file":"other"}`, ""))
		submit(i+1, c.signIntent("witness", id, "key-r001", `{"file":"other"}`, ""))
		want[id], attempts = "rejected", attempts+1
	}
	var ids []string
	for id := range want {
		ids = append(ids, id)
	}
	answers := c.waitFinal(ids, 60*time.Second)
	for id, r := range answers {
		if r.State != want[id] {
			t.Errorf("%s ended %s, want %s", id, r.State, want[id])
		}
	}
	leader := c.waitLeader(10 * time.Second)
	c.waitCaughtUp(leader)
	var roots []ledger.Checkpoint
	for i := range c.srv {
		// The admin changes that set the cluster up are leaves too.
		actx, acancel := context.WithTimeout(context.Background(), 10*time.Second)
		admin, err := c.client(i).AdminEntries(actx, 0, 1000)
		acancel()
		if err != nil || len(admin) == 0 {
			t.Fatalf("%s: admin entries: %v %v", c.srv[i].id, admin, err)
		}
		by := c.receiptsByIntent(i, uint64(attempts+len(admin)))
		total := 0
		for id, rs := range by {
			total += len(rs)
			if len(rs) != 1 || rs[0].Outcome != want[id] {
				t.Errorf("%s: intent %s has receipts %+v, want one %s", c.srv[i].id, id, rs, want[id])
			}
		}
		if total != attempts {
			t.Errorf("%s: %d receipts for %d authenticated attempts", c.srv[i].id, total, attempts)
		}
		// Every receipt verifies, with its proof, against the checkpoint
		// the server serves it with, under the cluster's key.
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ck, err := c.client(i).Checkpoint(cctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		v, err := ledger.NewVerifier(ck.VerifierKey)
		if err != nil {
			t.Fatal(err)
		}
		var last ledger.Checkpoint
		for k := range attempts {
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			raw, err := c.client(i).Receipt(rctx, uint64(k))
			cancel()
			if err != nil {
				t.Fatalf("%s: receipt %d: %v", c.srv[i].id, k, err)
			}
			rp, err := ledger.DecodeReceiptProof(raw)
			if err != nil {
				t.Fatalf("%s: receipt %d: %v", c.srv[i].id, k, err)
			}
			cp, err := ledger.VerifyReceipt(v, rp)
			if err != nil {
				t.Fatalf("%s: receipt %d does not verify: %v", c.srv[i].id, k, err)
			}
			last = cp
		}
		roots = append(roots, last)
	}
	// Every server keeps the outputs beside the intents: each answers
	// with the same bytes for every completed run, the ones the node's
	// signed result commits to, and no receipt holds them.
	for id, r := range answers {
		if r.State != "completed" {
			continue
		}
		res, err := protocol.DecodeResult(r.Result, 0)
		if err != nil || res.Version() != 2 {
			t.Fatalf("%s: result %s (%v), want a %s", id, r.Result, err, protocol.ResultTypeV2)
		}
		for i := range c.srv {
			octx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			o, err := c.client(i).Output(octx, id)
			cancel()
			if err != nil || res.CheckCaptured(o.Data) != nil || o.DispatchID != res.DispatchID {
				t.Errorf("%s: output of %s: %+v %v; want the captured output of its result", c.srv[i].id, id, o, err)
			}
		}
	}
	for i, cp := range roots {
		if cp.Size == roots[0].Size && cp.Root != roots[0].Root {
			t.Errorf("%s and %s: different roots at size %d", c.srv[0].id, c.srv[i].id, cp.Size)
		}
	}
	c.checkLedgers()
}
