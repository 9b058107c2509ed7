package protocol_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/protocol"
)

// adminVectors is testdata/admin_v1.json: admin entries, their leaves
// (JCS) and RFC 6962 leaf hashes, and entries that must be refused.
type adminVectors struct {
	Description string      `json:"description"`
	Cases       []adminCase `json:"cases"`
}

type adminCase struct {
	Name string `json:"name"`
	JSON string `json:"json"`
	// Leaf and LeafHash (standard base64 of SHA-256(0x00 || leaf)) are
	// given for a valid entry; Error is the code decoding reports for an
	// invalid one.
	Leaf     string `json:"leaf,omitempty"`
	LeafHash string `json:"leaf_hash,omitempty"`
	Error    string `json:"error,omitempty"`
}

func rfc6962Leaf(leaf []byte) string {
	sum := sha256.Sum256(append([]byte{0}, leaf...))
	return base64.StdEncoding.EncodeToString(sum[:])
}

func generateAdminVectors(t *testing.T) adminVectors {
	v := adminVectors{Description: "writ.admin/v1: admin entries of the receipt ledger. leaf is the entry's JCS, leaf_hash the standard base64 of SHA-256(0x00 || leaf); error is the code decoding reports for an entry that must be refused"}
	h := func(s string) string { return protocol.HashBytes([]byte(s)) }
	base := func() protocol.AdminEntry {
		return protocol.AdminEntry{Type: protocol.AdminEntryType, Index: 42, Actor: "admin-token:9f86d081884c7d65",
			Action: protocol.AdminLockCreate, Object: "lck-ABCDEFGHIJKLMNOP", Tenant: "acme", After: h("lock"),
			RecordedAt: "2026-11-22T10:05:00.5Z"}
	}
	valid := func(name string, e protocol.AdminEntry) {
		leaf, err := e.Leaf()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// The JSON as a server might send it: members in declaration order.
		v.Cases = append(v.Cases, adminCase{Name: name, JSON: string(encode(t, &e)), Leaf: string(leaf), LeafHash: rfc6962Leaf(leaf)})
	}
	invalid := func(name, raw string) {
		v.Cases = append(v.Cases, adminCase{Name: name, JSON: raw, Error: string(protocol.CodeMalformed)})
	}
	valid("lock created", base())
	policy := base()
	policy.Action, policy.Object, policy.Tenant, policy.Before, policy.After, policy.Actor = protocol.AdminPolicyRollback, "policy", "", h("v2"), h("v1"), "user:0a1b2c3d4e5f6071"
	valid("policy rolled back by a dashboard user", policy)
	del := base()
	del.Action, del.Object, del.Before, del.After, del.Actor = protocol.AdminKeyDelete, "acme/orch-1", h("key"), "", "dev"
	valid("key deleted by writ dev", del)

	raw := string(encode(t, ptr(base())))
	replace := func(from, to string) string {
		out := bytes.Replace([]byte(raw), []byte(from), []byte(to), 1)
		if string(out) == raw {
			t.Fatalf("%s is not in %s", from, raw)
		}
		return string(out)
	}
	invalid("a receipt's type", replace(`"writ.admin/v1"`, `"writ.receipt/v1"`))
	invalid("an action outside the vocabulary", replace(`"lock.create"`, `"lock.steal"`))
	invalid("a hash that is not sha256:", replace(`"after":"sha256:`, `"after":"md5:`))
	invalid("a member receipts have", replace(`"index":42`, `"index":42,"outcome":"completed"`))
	invalid("no actor", replace(`"actor":"admin-token:9f86d081884c7d65",`, ``))
	invalid("a duplicate member", replace(`"index":42`, `"index":42,"index":43`))
	invalid("a time that is not RFC 3339", replace(`"2026-11-22T10:05:00.5Z"`, `"yesterday"`))
	return v
}

func ptr[T any](v T) *T { return &v }

func TestAdminVectors(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "admin_v1.json")
	want, err := json.Marshal(generateAdminVectors(t), json.Deterministic(true), jsontext.Multiline(true))
	if err != nil {
		t.Fatal(err)
	}
	if *updateVectors {
		if err := os.WriteFile(path, append(want, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./protocol -run TestAdminVectors -update writes it)", err)
	}
	if !bytes.Equal(bytes.TrimSpace(b), want) {
		t.Errorf("%s differs from its generator (run go test ./protocol -run TestAdminVectors -update if the change is intended)", path)
	}
	var v adminVectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			e, err := protocol.DecodeAdminEntry([]byte(c.JSON), 0)
			if got := string(protocol.CodeOf(err)); got != c.Error {
				t.Fatalf("decode: got code %q (%v), want %q", got, err, c.Error)
			}
			if err != nil {
				return
			}
			leaf, err := e.Leaf()
			if err != nil || string(leaf) != c.Leaf {
				t.Fatalf("leaf:\n got %s (%v)\nwant %s", leaf, err, c.Leaf)
			}
			if got := rfc6962Leaf(leaf); got != c.LeafHash {
				t.Errorf("leaf hash %s, want %s", got, c.LeafHash)
			}
			if protocol.LeafType(leaf) != protocol.AdminEntryType {
				t.Errorf("LeafType = %q", protocol.LeafType(leaf))
			}
			// Never taken for a receipt.
			if _, err := protocol.DecodeReceipt(leaf, 0); err == nil {
				t.Errorf("the admin entry decodes as a receipt")
			}
		})
	}
}

// TestReceiptIsNotAdminEntry: a receipt's leaf is refused as an admin entry.
func TestReceiptIsNotAdminEntry(t *testing.T) {
	t.Parallel()
	r := []byte(`{"type":"writ.receipt/v1","index":0,"intent_id":"i","tenant":"t","principal":"p","tool":"echo","payload_hash":"sha256:00","idempotency_key":"k","outcome":"denied","policy":null,"approval":null,"dispatch":null,"result":null,"recorded_at":"2026-11-22T10:00:00Z"}`)
	if _, err := protocol.DecodeReceipt(r, 0); err != nil {
		t.Fatalf("the receipt does not decode: %v", err)
	}
	if _, err := protocol.DecodeAdminEntry(r, 0); protocol.CodeOf(err) != protocol.CodeMalformed {
		t.Fatalf("a receipt decoded as an admin entry: %v", err)
	}
	if protocol.LeafType(r) != protocol.ReceiptType {
		t.Errorf("LeafType = %q", protocol.LeafType(r))
	}
}
