package ledger_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/writhq/writ/ledger"
)

func TestCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("other"), ""},
		{fmt.Errorf("checkpoint 2: %w", ledger.ErrRollback), "rollback"},
		{ledger.ErrInconsistent, "inconsistent"},
		{fmt.Errorf("open: %w", ledger.ErrTruncated), "truncated"},
		{ledger.ErrCheckpointMismatch, "checkpoint_mismatch"},
		{&ledger.LeafError{Index: 3, Err: ledger.ErrCorrupt}, "corrupt"},
		{&ledger.LeafError{Index: 3, Err: ledger.ErrProofMismatch}, "proof_mismatch"},
		{ledger.ErrMalformedProof, "malformed"},
		{ledger.ErrBadSignature, "bad_signature"},
		{ledger.ErrUnknownKey, "unknown_key"},
		{ledger.ErrWrongOrigin, "wrong_origin"},
		{ledger.ErrIndexOutOfRange, "index_out_of_range"},
		{ledger.ErrUntrustedKey, "untrusted_key"},
		{ledger.ErrIndexMismatch, "index_mismatch"},
		{ledger.ErrNotFound, "not_found"},
	}
	for _, tt := range tests {
		if got := ledger.Code(tt.err); got != tt.want {
			t.Errorf("Code(%v): got %q, want %q", tt.err, got, tt.want)
		}
	}
}
