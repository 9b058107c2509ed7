package ledger_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/ledger"
)

// bundleFixture exports receipts [2, 9) of a log that published checkpoints at
// sizes 4, 10 and 16, chained in the bundle.
func bundleFixture(t testing.TB) (*fixture, *ledger.Bundle) {
	t.Helper()
	f := newFixture(t, "writ.test/a", 4)
	older := [][]byte{f.signed}
	for _, upto := range []int{10, 16} {
		for i := int(f.log.Size()); i < upto; i++ {
			if _, err := f.log.Append(receipt(i)); err != nil {
				t.Fatal(err)
			}
		}
		signed, err := f.log.Publish(f.signer)
		if err != nil {
			t.Fatal(err)
		}
		older = append(older, signed)
	}
	b, err := f.log.Export(2, 9, older[:2]...)
	if err != nil {
		t.Fatal(err)
	}
	return f, b
}

func TestBundleRoundTrip(t *testing.T) {
	t.Parallel()
	f, b := bundleFixture(t)
	data, err := jsonx.MarshalIndent(b, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := ledger.DecodeBundle(data)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ledger.VerifyBundle(decoded, f.vkey)
	if err != nil {
		t.Fatalf("exported bundle does not verify: %v", err)
	}
	if c.Size != 16 || len(decoded.Checkpoints) != 3 || len(decoded.Receipts) != 7 {
		t.Errorf("got size %d, %d checkpoints, %d receipts; want 16, 3, 7", c.Size, len(decoded.Checkpoints), len(decoded.Receipts))
	}
}

func TestVerifyBundleErrors(t *testing.T) {
	t.Parallel()
	other := newFixture(t, "writ.test/b", 3)
	tests := []struct {
		name   string
		change func(b *ledger.Bundle) string // returns the key to trust
		want   error
	}{
		{"untrusted key", func(b *ledger.Bundle) string { return other.vkey }, ledger.ErrUntrustedKey},
		{"changed receipt", func(b *ledger.Bundle) string {
			b.Receipts[3].Receipt = jsontext.Value(strings.Replace(string(b.Receipts[3].Receipt), "completed", "failed", 1))
			return b.VerifierKey
		}, ledger.ErrProofMismatch},
		{"renumbered receipt", func(b *ledger.Bundle) string {
			b.Receipts[3].Index++
			return b.VerifierKey
		}, ledger.ErrIndexMismatch},
		{"receipt reformatted", func(b *ledger.Bundle) string {
			b.Receipts[0].Receipt = jsontext.Value(" {\n \"type\": \"writ.receipt/v1\", \"outcome\":\"completed\",\"intent_id\":\"int-0002\",\"index\":2}")
			return b.VerifierKey
		}, nil},
		{"checkpoints out of order", func(b *ledger.Bundle) string {
			b.Checkpoints[0], b.Checkpoints[1] = b.Checkpoints[1], b.Checkpoints[0]
			return b.VerifierKey
		}, ledger.ErrRollback},
		{"consistency proof missing", func(b *ledger.Bundle) string {
			b.Consistency = b.Consistency[:1]
			return b.VerifierKey
		}, ledger.ErrMalformedBundle},
		{"receipt against an unlisted checkpoint", func(b *ledger.Bundle) string {
			b.Receipts[0].Checkpoint = string(other.signed)
			return b.VerifierKey
		}, ledger.ErrMalformedBundle},
		{"duplicate member in receipt", func(b *ledger.Bundle) string {
			b.Receipts[0].Receipt = jsontext.Value(`{"index":2,"index":2}`)
			return b.VerifierKey
		}, ledger.ErrMalformedBundle},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, b := bundleFixture(t)
			key := tt.change(b)
			_, err := ledger.VerifyBundle(b, key)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}
