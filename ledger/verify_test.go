package ledger_test

import (
	"context"
	"errors"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/writhq/writ/ledger"
)

// fixture is a log of n receipts with a published checkpoint.
type fixture struct {
	log    *ledger.Log
	signer note.Signer
	vkey   string
	v      note.Verifier
	signed []byte
}

func newFixture(t testing.TB, origin string, n int) *fixture {
	t.Helper()
	return newFixtureOn(t, origin, n, ledger.NewMemStore())
}

// newFixtureOn is newFixture over a given store.
func newFixtureOn(t testing.TB, origin string, n int, store ledger.Store) *fixture {
	t.Helper()
	seed := make([]byte, 32)
	copy(seed, origin)
	signer, vkey, err := ledger.NewSigner(origin, seed)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ledger.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(context.Background(), store, ledger.Config{VerifierKey: vkey})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := l.Append(receipt(i)); err != nil {
			t.Fatal(err)
		}
	}
	signed, err := l.Publish(signer)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{log: l, signer: signer, vkey: vkey, v: v, signed: signed}
}

func TestVerifyInclusionErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "writ.test/a", 21)
	other := newFixture(t, "writ.test/b", 21)
	proof, err := f.log.InclusionProof(7, 21)
	if err != nil {
		t.Fatal(err)
	}
	// A checkpoint with the right key but another log's name in its body.
	c, _, _ := f.log.Latest()
	c.Origin = "writ.test/elsewhere"
	misnamed, err := note.Sign(&note.Note{Text: c.String()}, f.signer)
	if err != nil {
		t.Fatal(err)
	}
	tampered := append([]byte(nil), f.signed...)
	tampered[len("writ.test/a\n")] = '3' // size 21 becomes 31
	short := append(ledger.Proof(nil), proof[1:]...)
	tests := []struct {
		name       string
		checkpoint []byte
		index      int64
		leaf       []byte
		proof      ledger.Proof
		want       error
	}{
		{"valid", f.signed, 7, receipt(7), proof, nil},
		{"other leaf", f.signed, 7, receipt(8), proof, ledger.ErrProofMismatch},
		{"other index", f.signed, 6, receipt(7), proof, ledger.ErrProofMismatch},
		{"short proof", f.signed, 7, receipt(7), short, ledger.ErrProofMismatch},
		{"index past size", f.signed, 21, receipt(7), proof, ledger.ErrIndexOutOfRange},
		{"negative index", f.signed, -1, receipt(7), proof, ledger.ErrIndexOutOfRange},
		{"changed checkpoint", tampered, 7, receipt(7), proof, ledger.ErrBadSignature},
		{"another log's checkpoint", other.signed, 7, receipt(7), proof, ledger.ErrUnknownKey},
		{"wrong origin", misnamed, 7, receipt(7), proof, ledger.ErrWrongOrigin},
		{"not a note", []byte("hello\n"), 7, receipt(7), proof, ledger.ErrMalformedCheckpoint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ledger.VerifyInclusion(f.v, tt.checkpoint, tt.index, tt.leaf, tt.proof)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestVerifyConsistencyErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "writ.test/a", 10)
	first := f.signed
	for i := 10; i < 30; i++ {
		if _, err := f.log.Append(receipt(i)); err != nil {
			t.Fatal(err)
		}
	}
	second, err := f.log.Publish(f.signer)
	if err != nil {
		t.Fatal(err)
	}
	proof, err := f.log.ConsistencyProof(10, 30)
	if err != nil {
		t.Fatal(err)
	}
	// A fork: same key, same first 9 receipts, a different 10th and more.
	fork := newFixture(t, "writ.test/a", 9)
	for i := 9; i < 30; i++ {
		if _, err := fork.log.Append(receipt(i + 1000)); err != nil {
			t.Fatal(err)
		}
	}
	forked, err := fork.log.Publish(fork.signer)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		older, newer []byte
		proof        ledger.Proof
		want         error
	}{
		{"valid", first, second, proof, nil},
		{"same checkpoint", second, second, ledger.Proof{}, nil},
		{"rollback", second, first, proof, ledger.ErrRollback},
		{"split view", first, forked, proof, ledger.ErrInconsistent},
		{"truncated proof", first, second, proof[:len(proof)-1], ledger.ErrInconsistent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ledger.VerifyConsistency(f.v, tt.older, tt.newer, tt.proof)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	split := ledger.Checkpoint{Origin: "writ.test/a", Size: 30, Root: ledger.LeafHash(nil)}
	c, _, _ := f.log.Latest()
	if err := ledger.CheckConsistency(c, split, nil); !errors.Is(err, ledger.ErrInconsistent) {
		t.Errorf("two roots at one size: got %v, want ErrInconsistent", err)
	}
}
