package protocol

import (
	"errors"
	"fmt"
)

// Code is a stable error code. Codes travel on the wire and are the contract;
// messages are for people and may change.
type Code string

// The protocol's error codes, in the order PROTOCOL.md reports them for each
// kind of object. When several checks fail, the first in the order is reported.
const (
	CodeMalformed           Code = "malformed"
	CodeUnknownKey          Code = "unknown_key"
	CodeBadSignature        Code = "bad_signature"
	CodePayloadHashMismatch Code = "payload_hash_mismatch"
	CodeTTLTooLong          Code = "ttl_too_long"
	CodeNotYetValid         Code = "not_yet_valid"
	CodeExpired             Code = "expired"

	CodeApprovalInvalid   Code = "approval_invalid"
	CodeApprovalMismatch  Code = "approval_mismatch"
	CodeApprovalExpired   Code = "approval_expired"
	CodeApprovalReplayed  Code = "approval_replayed"
	CodeApprovalForbidden Code = "approval_forbidden"
	// CodeApprovalDuplicate: an approver who already approved an intent that
	// needs several distinct approvers approved it again.
	CodeApprovalDuplicate Code = "approval_duplicate"

	// CodeWrongNode is reported by a node for a dispatch addressed to another node.
	CodeWrongNode Code = "wrong_node"

	// Codes a node reports in a refused result, after the dispatch's own
	// checks, from its own state: the nonce was seen before; the tool's
	// manifest hash or tier differs from the node owner's allowlist; the tool
	// is not in that allowlist; the tier is not one the node probed working;
	// the tier refused to start the tool (interpreter denied, option-like
	// parameter...).
	CodeReplayedNonce    Code = "replayed_nonce"
	CodeManifestMismatch Code = "manifest_mismatch"
	CodeUnknownTool      Code = "unknown_tool"
	CodeTierUnavailable  Code = "tier_unavailable"
	CodeSandboxRefused   Code = "sandbox_refused"

	// CodeOutputMismatch: an output is not the one a result's hashes and
	// sizes commit to (a node's captured output, a stored one, or a file
	// checked offline).
	CodeOutputMismatch Code = "output_mismatch"

	// CodeCanceled ends an intent that was canceled (POST
	// /v1/intents/{id}/cancel, a run's cancel): its error in the answer and
	// the receipt, whose outcome is OutcomeCanceled.
	CodeCanceled Code = "canceled"
	// CodeLocked: an admin's lock matches the intent. Its admission is
	// refused (rejected, binding no idempotency key), or, waiting or
	// running when the lock was made, it is stopped and ends canceled.
	CodeLocked Code = "locked"
)

// Error is a protocol error: a stable code, and a message that is safe to show
// to whoever sent the object (it never contains key material or signatures).
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// Is reports whether target is a protocol error with the same code, so that
// errors.Is(err, protocol.ErrExpired) holds for any expired error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinel errors, one per code, for errors.Is.
var (
	ErrMalformed           = &Error{Code: CodeMalformed}
	ErrUnknownKey          = &Error{Code: CodeUnknownKey}
	ErrBadSignature        = &Error{Code: CodeBadSignature}
	ErrPayloadHashMismatch = &Error{Code: CodePayloadHashMismatch}
	ErrTTLTooLong          = &Error{Code: CodeTTLTooLong}
	ErrNotYetValid         = &Error{Code: CodeNotYetValid}
	ErrExpired             = &Error{Code: CodeExpired}
	ErrApprovalInvalid     = &Error{Code: CodeApprovalInvalid}
	ErrApprovalMismatch    = &Error{Code: CodeApprovalMismatch}
	ErrApprovalExpired     = &Error{Code: CodeApprovalExpired}
	ErrApprovalReplayed    = &Error{Code: CodeApprovalReplayed}
	ErrApprovalForbidden   = &Error{Code: CodeApprovalForbidden}
	ErrWrongNode           = &Error{Code: CodeWrongNode}
	ErrOutputMismatch      = &Error{Code: CodeOutputMismatch}
)

// CodeOf returns the stable code of err, or "" if err is nil or carries none.
func CodeOf(err error) Code {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func fail(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func malformed(format string, args ...any) *Error {
	return fail(CodeMalformed, format, args...)
}
