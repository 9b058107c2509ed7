package controlplane_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/ledger"
	"github.com/writhq/writ/protocol"
)

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode == 200 {
		if err := jsonx.UnmarshalLenient(b, v); err != nil {
			t.Fatalf("%s: %v: %s", url, err, b)
		}
	}
	return resp.StatusCode
}

// TestReceiptsVerifyOffline: every final outcome gets a receipt; an answer
// with ?wait= carries it with its proof and checkpoint, and they verify with
// nothing but the ledger's verifier key.
func TestReceiptsVerifyOffline(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	addr := "http://" + d.s.Addr().String()
	v, err := ledger.NewVerifier(d.creds.LedgerKey)
	if err != nil {
		t.Fatal(err)
	}
	var indexes []uint64
	for i, raw := range [][]byte{
		d.intent(t, "no_such_tool", `{}`),
		d.intent(t, "echo_approval", `{}`),
		d.intent(t, "echo", `{}`, func(in *protocol.Intent) { in.ExpiresAt = protocol.FormatTime(time.Now().Add(time.Hour)) }),
	} {
		var apr []byte
		if i == 1 {
			apr = d.approval(t, raw, "deny")
		}
		r, err := d.c.Submit(ctx, raw, apr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if r.ReceiptIndex == nil || len(r.Receipt) == 0 || r.Checkpoint == "" {
			t.Fatalf("final intent %s (%s) came without its receipt: %+v", r.IntentID, r.State, r)
		}
		proof, err := ledger.ParseProof(r.Proof)
		if err != nil {
			t.Fatal(err)
		}
		rp := &ledger.ReceiptProof{Receipt: jsontext.Value(r.Receipt), Index: int64(*r.ReceiptIndex), Proof: proof, Checkpoint: r.Checkpoint}
		if _, err := ledger.VerifyReceipt(v, rp); err != nil {
			t.Fatalf("receipt of %s does not verify: %v", r.IntentID, err)
		}
		rc, err := protocol.DecodeReceipt(r.Receipt, 0)
		if err != nil || rc.IntentID != r.IntentID || rc.Outcome != r.State {
			t.Fatalf("receipt %+v for intent %s in state %s", rc, r.IntentID, r.State)
		}
		indexes = append(indexes, *r.ReceiptIndex)
	}
	// The same receipt from GET /v1/receipts/{index}, read by its tenant
	// (writ dev's own setup, on the record, holds the first indexes).
	one := fmt.Sprint(indexes[1])
	raw, err := d.c.Receipt(ctx, indexes[1])
	if err != nil {
		t.Fatal(err)
	}
	rp, err := ledger.DecodeReceiptProof(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.VerifyReceipt(v, rp); err != nil {
		t.Fatalf("GET /v1/receipts/%s does not verify: %v", one, err)
	}
	// Without credentials: the leaf's hash and the same proof, no receipt.
	var public map[string]any
	if code := getJSON(t, addr+"/v1/receipts/"+one, &public); code != 200 {
		t.Fatalf("GET /v1/receipts/%s without credentials: %d", one, code)
	}
	leaf, _ := rp.Leaf()
	if _, ok := public["receipt"]; ok || len(public) != 4 || public["leaf_hash"] != ledger.LeafHash(leaf).String() ||
		public["checkpoint"] != rp.Checkpoint || fmt.Sprint(public["proof"]) != fmt.Sprint(rp.Proof.Strings()) {
		t.Fatalf("GET /v1/receipts/%s without credentials answers %v", one, public)
	}
	if code := getJSON(t, addr+"/v1/receipts/99", nil); code != 404 {
		t.Errorf("a receipt beyond the log: %d, want 404", code)
	}
	var cp struct {
		Checkpoint string `json:"checkpoint"`
		Size       int64  `json:"size"`
	}
	if code := getJSON(t, addr+"/v1/ledger/checkpoint", &cp); code != 200 || cp.Size < 3 {
		t.Fatalf("checkpoint: %d %+v", code, cp)
	}
	var cons struct {
		From, To int64
		Proof    []string
	}
	if code := getJSON(t, addr+"/v1/ledger/consistency?from=1&to=3", &cons); code != 200 || cons.To != 3 {
		t.Fatalf("consistency: %d %+v", code, cons)
	}
	if code := getJSON(t, addr+"/v1/ledger/consistency?from=3&to=1", nil); code != 400 {
		t.Errorf("consistency backwards: %d, want 400", code)
	}
	if indexes[0] == indexes[1] || indexes[1] == indexes[2] {
		t.Errorf("receipt indexes repeat: %v", indexes)
	}
}

// TestReceiptsSyncedInTheBackground: the receipt store defers fsync, and the
// server syncs it in the background — not only when a checkpoint is set.
// With checkpoints held back after the first, the head on disk still comes
// to cover every receipt.
func TestReceiptsSyncedInTheBackground(t *testing.T) {
	t.Parallel()
	d := startDevWith(t, func(c *controlplane.Config) { c.PublishInterval = time.Hour })
	ctx := context.Background()
	checkpoint := "http://" + d.s.Addr().String() + "/v1/ledger/checkpoint"
	submit := func() {
		t.Helper()
		r, err := d.c.Submit(ctx, d.intent(t, "no_such_tool", `{}`), nil, 200*time.Millisecond)
		if err != nil || r.ReceiptIndex == nil {
			t.Fatalf("submit: %+v %v", r, err)
		}
	}
	// The first checkpoint comes at once, over however many receipts the
	// leader had when it published (on a loaded machine, more than one).
	submit()
	var first struct{ Size int64 }
	eventually.NoError(t, "the first checkpoint", func() error {
		if code := getJSON(t, checkpoint, &first); code != 200 || first.Size == 0 {
			return fmt.Errorf("checkpoint: %d %+v", code, first)
		}
		return nil
	})
	const n = 4
	for range n {
		submit()
	}
	var cp struct{ Size int64 }
	if code := getJSON(t, checkpoint, &cp); code != 200 || cp.Size != first.Size {
		t.Fatalf("checkpoint: %d %+v; want it held at the first, over %d receipts", code, cp, first.Size)
	}
	head := filepath.Join(d.dir, "ledger", "head")
	eventually.NoError(t, fmt.Sprintf("the head on disk to say %d receipts", first.Size+n), func() error {
		b, err := os.ReadFile(head)
		if err != nil {
			return err
		}
		var size int64
		fmt.Sscanf(string(b), "writ-ledger-head v1\n%d\n", &size)
		if size < first.Size+n {
			return fmt.Errorf("it says %d (%q)", size, b)
		}
		return nil
	})
}
