package ledger_test

import (
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/writhq/writ/internal/jsonx"
)

// ledgerVectors is ../shared/vectors/ledger.json.
type ledgerVectors struct {
	Leaves []struct {
		Leaf     string `json:"leaf"`
		LeafHash string `json:"leaf_hash"`
	} `json:"leaves"`
	Roots     map[string]string `json:"roots"`
	Inclusion struct {
		Index    int64    `json:"index"`
		TreeSize int64    `json:"tree_size"`
		Proof    []string `json:"proof"`
	} `json:"inclusion"`
	Consistency struct {
		From  int64    `json:"from"`
		To    int64    `json:"to"`
		Proof []string `json:"proof"`
	} `json:"consistency"`
	CheckpointSeed     string `json:"checkpoint_seed"`
	CheckpointNote     string `json:"checkpoint_note"`
	NoteVerifierKey    string `json:"note_verifier_key"`
	TamperedCheckpoint string `json:"tampered_checkpoint"`
}

// vectorsDir finds the shared vectors: $WRIT_VECTORS, or ../shared/vectors
// beside the repository, which is ../../shared/vectors from this package.
func vectorsDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("WRIT_VECTORS")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "vectors")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("shared test vectors not found at %s (set WRIT_VECTORS to their folder): %v", dir, err)
	}
	return dir
}

func loadVectors(t testing.TB) *ledgerVectors {
	t.Helper()
	path := filepath.Join(vectorsDir(t), "ledger.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	var v ledgerVectors
	if err := jsonx.UnmarshalLenient(data, &v); err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	if len(v.Leaves) == 0 || len(v.Roots) != len(v.Leaves) {
		t.Fatalf("%s: %d leaves and %d roots, want a root for every size", path, len(v.Leaves), len(v.Roots))
	}
	return &v
}

func (v *ledgerVectors) leaves() [][]byte {
	out := make([][]byte, len(v.Leaves))
	for i, l := range v.Leaves {
		out[i] = []byte(l.Leaf)
	}
	return out
}

// origin is the first line of the checkpoint note.
func (v *ledgerVectors) origin() string { return strings.SplitN(v.CheckpointNote, "\n", 2)[0] }

func (v *ledgerVectors) seed(t testing.TB) []byte {
	seed, err := base64.StdEncoding.DecodeString(v.CheckpointSeed)
	if err != nil {
		t.Fatalf("checkpoint_seed: %v", err)
	}
	return seed
}

func (v *ledgerVectors) root(t testing.TB, size int64) string {
	r, ok := v.Roots[strconv.FormatInt(size, 10)]
	if !ok {
		t.Fatalf("no root for size %d in the vectors", size)
	}
	return r
}

func mustHex(t testing.TB, s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("hex %q: %v", s, err)
	}
	return b
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
