// Package protocoltest loads the shared protocol test vectors, for the tests of
// every package that must pass them (protocol, the CLI, the ledger).
package protocoltest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/writhq/writ/internal/jsonx"
)

// EnvVectors names a folder of vectors to use instead of ../shared/vectors.
const EnvVectors = "WRIT_VECTORS"

// Dir returns the folder holding the shared vectors: $WRIT_VECTORS, or the
// folder shared/vectors beside the repository. A missing folder fails the test:
// the vectors are the contract, and a run without them proves nothing.
func Dir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv(EnvVectors); d != "" {
		return mustDir(t, d)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	// Walk up to the module root, then to its sibling shared/vectors.
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return mustDir(t, filepath.Join(filepath.Dir(d), "shared", "vectors"))
		}
		if filepath.Dir(d) == d {
			t.Fatalf("protocol vectors: no go.mod above %s", wd)
		}
	}
}

func mustDir(t testing.TB, d string) string {
	t.Helper()
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		t.Fatalf("protocol vectors: folder %s is missing (set %s to its path); the shared vectors must be present for the tests to mean anything", d, EnvVectors)
	}
	return d
}

// Load decodes the vector file name (such as "intent.json") into v.
func Load(t testing.TB, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(t), name))
	if err != nil {
		t.Fatalf("protocol vectors: %v", err)
	}
	if err := jsonx.UnmarshalLenient(b, v); err != nil {
		t.Fatalf("protocol vectors: %s: %v", name, err)
	}
}

// PayloadHashVectors is payload_hash.json.
type PayloadHashVectors struct {
	Cases []struct {
		Name        string `json:"name"`
		Tool        string `json:"tool"`
		ParamsJSON  string `json:"params_json"`
		Canonical   string `json:"canonical"`
		PayloadHash string `json:"payload_hash"`
	} `json:"cases"`
}

// IntentVectors is intent.json.
type IntentVectors struct {
	Keys          map[string]string `json:"keys"`
	MaxTTLSeconds int               `json:"max_ttl_seconds"`
	Now           string            `json:"now"`
	SkewSeconds   int               `json:"skew_seconds"`
	Cases         []struct {
		Name         string `json:"name"`
		IntentJSON   string `json:"intent_json"`
		SigningInput string `json:"signing_input"`
		Valid        bool   `json:"valid"`
		Error        string `json:"error"`
	} `json:"cases"`
}

// ApprovalVectors is approval.json.
type ApprovalVectors struct {
	ApproverKeys map[string]struct {
		Public string `json:"public"`
		Seed   string `json:"seed"`
	} `json:"approver_keys"`
	ConsumedNonces []string `json:"consumed_nonces"`
	IntentJSON     string   `json:"intent_json"`
	Now            string   `json:"now"`
	Cases          []struct {
		Name         string `json:"name"`
		ApprovalJSON string `json:"approval_json"`
		SigningInput string `json:"signing_input"`
		Valid        bool   `json:"valid"`
		Decision     string `json:"decision"`
		Error        string `json:"error"`
	} `json:"cases"`
}

// KeyPair is a vector key: its id, public key and seed, in base64.
type KeyPair struct {
	KeyID  string `json:"key_id"`
	Public string `json:"public"`
	Seed   string `json:"seed"`
}

// DispatchResultVectors is dispatch_result.json.
type DispatchResultVectors struct {
	NodeKey   KeyPair `json:"node_key"`
	ServerKey KeyPair `json:"server_key"`
	Cases     []struct {
		Name         string `json:"name"`
		Kind         string `json:"kind"`
		JSON         string `json:"json"`
		SigningInput string `json:"signing_input"`
		Valid        bool   `json:"valid"`
	} `json:"cases"`
}
