package ledger

import "errors"

// codes maps the package's errors to stable codes, most specific first (a
// rollback is also inconsistent; a truncation is also corruption).
var codes = []struct {
	err  error
	code string
}{
	{ErrRollback, "rollback"},
	{ErrInconsistent, "inconsistent"},
	{ErrTruncated, "truncated"},
	{ErrCheckpointMismatch, "checkpoint_mismatch"},
	{ErrCorrupt, "corrupt"},
	{ErrMalformedHash, "malformed"},
	{ErrMalformedProof, "malformed"},
	{ErrMalformedCheckpoint, "malformed"},
	{ErrMalformedBundle, "malformed"},
	{ErrBadKey, "bad_key"},
	{ErrUnknownKey, "unknown_key"},
	{ErrBadSignature, "bad_signature"},
	{ErrWrongOrigin, "wrong_origin"},
	{ErrIndexOutOfRange, "index_out_of_range"},
	{ErrProofMismatch, "proof_mismatch"},
	{ErrUntrustedKey, "untrusted_key"},
	{ErrIndexMismatch, "index_mismatch"},
	{ErrNotFound, "not_found"},
	{ErrClosed, "closed"},
}

// Code returns a stable, machine-readable code for an error from this package
// — what `writ verify` prints as the reason and what an API may send instead of
// the Go error text — or "" for nil or an error the package does not know.
// Codes never change meaning; the messages may.
func Code(err error) string {
	if err == nil {
		return ""
	}
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return ""
}
