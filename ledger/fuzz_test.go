package ledger_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/ledger"
)

var update = flag.Bool("update", false, "rewrite testdata/bundle.json")

// TestBundleGolden keeps testdata/bundle.json, a sample bundle for readers and
// a fuzz seed, equal to what Export writes for the bundle fixture.
func TestBundleGolden(t *testing.T) {
	t.Parallel()
	f, b := bundleFixture(t)
	got, err := jsonx.MarshalIndent(b, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "bundle.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run Golden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("exported bundle differs from %s (run with -update if the change is intended):\n%s", path, got)
	}
	if _, err := ledger.VerifyBundle(b, f.vkey); err != nil {
		t.Error(err)
	}
}

func FuzzParseCheckpoint(f *testing.F) {
	v := loadVectors(f)
	f.Add([]byte(v.CheckpointNote[:bytes.Index([]byte(v.CheckpointNote), []byte("\n\n"))+1]))
	f.Add([]byte("o\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\next\n"))
	f.Add([]byte("o\n01\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		c, err := ledger.ParseCheckpoint(text)
		if err != nil {
			return
		}
		if got := c.Text(); !bytes.Equal(got, text) {
			t.Errorf("parsed checkpoint does not print back: got %q, want %q", got, text)
		}
	})
}

func FuzzOpenCheckpoint(f *testing.F) {
	v := loadVectors(f)
	f.Add([]byte(v.CheckpointNote))
	f.Add([]byte(v.TamperedCheckpoint))
	verifier, err := ledger.NewVerifier(v.NoteVerifierKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		c, err := ledger.OpenCheckpoint(msg, verifier)
		if err != nil {
			return
		}
		if c.Origin != verifier.Name() {
			t.Errorf("opened a checkpoint for %q with the key of %q", c.Origin, verifier.Name())
		}
	})
}

func FuzzProofJSON(f *testing.F) {
	v := loadVectors(f)
	seed, _ := jsonx.Marshal(v.Inclusion.Proof)
	f.Add(seed)
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	f.Add([]byte(`["AAAA"]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p ledger.Proof
		if err := jsonx.UnmarshalLenient(data, &p); err != nil {
			return
		}
		out, err := jsonx.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var again ledger.Proof
		if err := jsonx.UnmarshalLenient(out, &again); err != nil || !slices.Equal(p, again) {
			t.Errorf("proof does not round-trip: %v, %v then %v", err, p, again)
		}
	})
}

// FuzzVerify runs proof checking on arbitrary proofs: it must never panic and
// never accept a proof for a leaf other than the one the vectors prove.
func FuzzVerify(f *testing.F) {
	v := loadVectors(f)
	f.Add(v.Inclusion.Index, []byte(v.Leaves[v.Inclusion.Index].Leaf), int64(7), int64(13))
	f.Add(int64(-1), []byte("x"), int64(0), int64(0))
	f.Add(int64(12), []byte("x"), int64(13), int64(7))
	proof, _ := ledger.ParseProof(v.Inclusion.Proof)
	cons, _ := ledger.ParseProof(v.Consistency.Proof)
	root := func(n int64) ledger.Hash { h, _ := ledger.ParseHash(v.Roots[itoa(n)]); return h }
	top := ledger.Checkpoint{Origin: v.origin(), Size: v.Inclusion.TreeSize, Root: root(v.Inclusion.TreeSize)}
	f.Fuzz(func(t *testing.T, index int64, leaf []byte, from, to int64) {
		err := ledger.CheckInclusion(top, index, leaf, proof)
		if err == nil && (index != v.Inclusion.Index || string(leaf) != v.Leaves[index].Leaf) {
			t.Errorf("accepted leaf %q at %d", leaf, index)
		}
		for _, n := range []int64{from, to} {
			if n >= 0 && n <= int64(len(v.Leaves)) && n != 0 {
				c := ledger.Checkpoint{Origin: v.origin(), Size: n, Root: root(n)}
				ledger.CheckInclusion(c, index, leaf, proof[:min(len(proof), int(n%5))])
			}
		}
		older := ledger.Checkpoint{Origin: v.origin(), Size: from, Root: root(from)}
		newer := ledger.Checkpoint{Origin: v.origin(), Size: to, Root: root(to)}
		if err := ledger.CheckConsistency(older, newer, cons); err == nil && !(from == v.Consistency.From && to == v.Consistency.To) {
			t.Errorf("accepted the %d→%d proof for %d→%d", v.Consistency.From, v.Consistency.To, from, to)
		}
	})
}

func FuzzDecodeBundle(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("testdata", "bundle.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	f.Add([]byte(`{"verifier_key":"a+b+c","checkpoints":["x"],"consistency":[],"receipts":[]}`))
	fx, _ := bundleFixture(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ledger.DecodeBundle(data)
		if err != nil {
			return
		}
		ledger.VerifyBundle(b, fx.vkey) // must not panic; golden verifies in TestBundleGolden
	})
}

func FuzzDecodeReceiptProof(f *testing.F) {
	fx, b := bundleFixture(f)
	seed, _ := jsonx.Marshal(b.Receipts[0])
	f.Add(seed)
	f.Add([]byte(`{"receipt":{},"index":0,"proof":[],"checkpoint":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rp, err := ledger.DecodeReceiptProof(data)
		if err != nil {
			return
		}
		ledger.VerifyReceipt(fx.v, rp)
	})
}
