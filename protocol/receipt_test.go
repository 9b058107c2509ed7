package protocol_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/protocol/protocoltest"
)

func TestReceiptLeaf(t *testing.T) {
	t.Parallel()
	r := newResult()
	if err := r.Sign(nodePriv); err != nil {
		t.Fatal(err)
	}
	signed, err := protocol.Canonicalize(encode(t, r))
	if err != nil {
		t.Fatal(err)
	}
	rc := &protocol.Receipt{
		Type: protocol.ReceiptType, Index: 7, IntentID: "int-1", Tenant: "acme", Principal: "support-bot",
		Tool: "echo", PayloadHash: protocol.HashBytes([]byte("p")), IdempotencyKey: "idem-1",
		Outcome:  protocol.OutcomeCompleted,
		Policy:   &protocol.PolicyDecision{Hash: protocol.HashBytes([]byte("policy")), Decision: "allow", Policies: []string{"p0"}},
		Dispatch: &protocol.DispatchRef{ID: "dsp-1", Node: "node-1", Fence: 42},
		Result:   jsontext.Value(signed), RecordedAt: protocol.FormatTime(t0),
	}
	leaf, err := rc.Leaf()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(leaf), `"approval":null`) || strings.Contains(string(leaf), `"error"`) {
		t.Errorf("leaf: approval must be null and error absent: %s", leaf)
	}
	canon, _ := protocol.Canonicalize(leaf)
	if string(canon) != string(leaf) {
		t.Errorf("leaf is not canonical:\n%s\n%s", leaf, canon)
	}
	back, err := protocol.DecodeReceipt(leaf, 0)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := back.Leaf()
	if string(again) != string(leaf) {
		t.Errorf("leaf changed through decode:\n%s\n%s", leaf, again)
	}
	// The result inside the receipt still verifies with the node key alone.
	nodes := signerKeys{"node-1": nodePriv.Public().(ed25519.PublicKey)}
	if _, err := verifierAt(t, t0).VerifyResult(back.Result, nodes); err != nil {
		t.Errorf("result inside the receipt: %v", err)
	}
	rc.Outcome = "done"
	if _, err := rc.Leaf(); protocol.CodeOf(err) != protocol.CodeMalformed {
		t.Errorf("unknown outcome: got %v, want malformed", err)
	}
}

func TestCheckpointBody(t *testing.T) {
	t.Parallel()
	var v struct {
		CheckpointNote string            `json:"checkpoint_note"`
		Roots          map[string]string `json:"roots"`
	}
	protocoltest.Load(t, "ledger.json", &v)
	body, _, ok := strings.Cut(v.CheckpointNote, "\n\n")
	if !ok {
		t.Fatalf("vector note has no signature block: %q", v.CheckpointNote)
	}
	body += "\n"
	c, err := protocol.ParseCheckpoint([]byte(body))
	if err != nil {
		t.Fatalf("ParseCheckpoint: %v", err)
	}
	if c.Origin != "writ.example/ledger" || c.Size != 13 {
		t.Errorf("got origin %q size %d", c.Origin, c.Size)
	}
	if got := base64.StdEncoding.EncodeToString(c.Root[:]); got != v.Roots["13"] {
		t.Errorf("root: got %s, want %s", got, v.Roots["13"])
	}
	if string(c.Marshal()) != body {
		t.Errorf("Marshal: got %q, want %q", c.Marshal(), body)
	}
	root := base64.StdEncoding.EncodeToString(c.Root[:])
	for name, bad := range map[string]string{
		"no newline":       strings.TrimSuffix(body, "\n"),
		"leading zero":     "o\n013\n" + root + "\n",
		"negative":         "o\n-1\n" + root + "\n",
		"short root":       "o\n1\nAAAA\n",
		"empty origin":     "\n1\n" + root + "\n",
		"missing root":     "o\n1\n",
		"empty extension":  "o\n1\n" + root + "\n\n",
		"carriage return":  "o\r\n1\n" + root + "\n",
		"not a number":     "o\nten\n" + root + "\n",
		"too large to be":  "o\n18446744073709551616\n" + root + "\n",
		"invalid encoding": "o\n1\n" + root + "\n\xff\n",
	} {
		if _, err := protocol.ParseCheckpoint([]byte(bad)); protocol.CodeOf(err) != protocol.CodeMalformed {
			t.Errorf("%s: got %v, want malformed", name, err)
		}
	}
	ext, err := protocol.ParseCheckpoint([]byte("o\n0\n" + root + "\nextra line\n"))
	if err != nil || len(ext.Extensions) != 1 || ext.Extensions[0] != "extra line" {
		t.Errorf("extension lines: got %+v, %v", ext, err)
	}
}
