package nodeagent

import (
	"context"
	"errors"
	"fmt"

	"github.com/writhq/writ/nodeagent/internal/store"
	"github.com/writhq/writ/protocol"
)

// Handle takes one signed dispatch, exactly as received, and the server
// keys the node trusts. It returns once the dispatch's result is durably in
// the outbox (or was already), and blocks meanwhile: while the tool runs,
// and while it waits for one of Concurrency slots.
//
//   - A dispatch that cannot be decoded at all returns ErrUndecodable,
//     wrapping the protocol error (the session answers with a reject
//     frame): without a dispatch id there is nothing to sign a result for.
//   - A dispatch that is not exactly what a trusted server signed (unknown
//     key, bad signature, params outside its payload hash) returns
//     ErrUnverified the same way, and nothing is recorded under the id it
//     claims, nor is it deduplicated by that id: a forgery carrying a real
//     dispatch's predictable id must not pre-empt the real dispatch.
//   - A dispatch whose id the store already knows (a re-push after a
//     reconnection) changes nothing: it never runs twice, and its result,
//     still in the outbox until acknowledged, is the session's to resend.
//   - A dispatch that fails any check gets a signed refused result, with
//     "code: message" in its error, and nothing runs. The checks, in order:
//     the protocol's (trusted server key, signature, addressed to this node,
//     payload hash, TTL, validity window), the tool in the allowlist
//     (unknown_tool), its manifest hash and tier equal to the allowlist's
//     (manifest_mismatch), the tier probed working (tier_unavailable), and,
//     last, the nonce never seen before (replayed_nonce). The nonce is
//     claimed only for a dispatch that passed every other check, so that a
//     forged dispatch can never burn a real one's nonce.
//   - Otherwise the run is journaled durably, the tool runs once, and its
//     signed result replaces the journal entry in one atomic step.
//
// ctx bounds the wait for a slot only: cancelling it then returns ctx.Err()
// with nothing recorded. A tool that started runs until it ends or Close.
// Errors other than the decoding one mean the store failed.
func (x *Executor) Handle(ctx context.Context, raw []byte, servers protocol.SignerKeys) error {
	// The dispatch is decoded once, by its verification; only one that
	// fails it is decoded again, alone, for the ids it claims (or to tell
	// that it cannot be decoded at all).
	verified, entry, checkErr := x.check(raw, servers)
	d := verified
	if d == nil {
		var err error
		if d, err = protocol.DecodeDispatch(raw, x.cfg.Verifier.Config().MaxBytes); err != nil {
			return fmt.Errorf("%w: %w", ErrUndecodable, err)
		}
	}
	if checkErr != nil && unauthenticated(checkErr) {
		x.log.Warn("dispatch not signed by a trusted server; rejected", "claimed_dispatch", d.ID,
			"code", string(protocol.CodeOf(checkErr)))
		return fmt.Errorf("%w: %w", ErrUnverified, checkErr)
	}
	// From here on the id is the one a trusted server signed.
	ok, err := x.enter(d.ID)
	if err != nil || !ok {
		return err
	}
	defer x.leave(d.ID)
	if known, err := x.cfg.Store.Known(d.ID); err != nil || known {
		return err
	}
	if checkErr != nil {
		return x.refuse(d, raw, checkErr)
	}
	waited := false
	select {
	case x.sem <- struct{}{}:
	default:
		waited = true
		stopped := x.awaitSlot(d.ID)
		defer x.slotTaken(d.ID)
		select {
		case x.sem <- struct{}{}:
		case <-stopped:
			// Canceled while it waited for a slot: it never starts.
			return x.canceledBeforeStart(d)
		case <-ctx.Done():
			return ctx.Err()
		case <-x.ctx.Done():
			return ErrClosed
		}
	}
	defer func() { <-x.sem }()

	// A wait for a slot may have outlasted the dispatch: then check its
	// validity window again against the clock (its bytes, signature and
	// addressee are what was verified). Taken at once, it was checked just
	// now. The nonce is claimed last, by run, in the step that journals it.
	if waited {
		if err := x.cfg.Verifier.CheckDispatchWindow(d); err != nil {
			return x.refuse(d, raw, err)
		}
	}
	return x.run(d, raw, entry)
}

// check makes every check but the nonce's, and returns the verified
// dispatch and its allowlist entry, or the reason to refuse.
func (x *Executor) check(raw []byte, servers protocol.SignerKeys) (*protocol.Dispatch, Entry, error) {
	d, err := x.cfg.Verifier.VerifyDispatch(raw, x.cfg.NodeID, servers)
	if err != nil {
		return nil, Entry{}, err
	}
	e, ok := x.cfg.Allowlist.Lookup(d.Tool)
	switch {
	case !ok:
		return d, e, nodeError(protocol.CodeUnknownTool, "tool %q is not in this node's allowlist", d.Tool)
	case e.Hash != d.ToolManifestHash:
		return d, e, nodeError(protocol.CodeManifestMismatch, "tool %q has manifest hash %s here, the dispatch names %s", d.Tool, e.Hash, d.ToolManifestHash)
	case d.Sandbox != e.Manifest.Tier:
		return d, e, nodeError(protocol.CodeManifestMismatch, "tool %q runs in the %s tier here, the dispatch asks for %s", d.Tool, e.Manifest.Tier, d.Sandbox)
	case !x.cfg.Tiers.Has(d.Sandbox):
		return d, e, nodeError(protocol.CodeTierUnavailable, "the %s tier is not available on this node", d.Sandbox)
	}
	return d, e, nil
}

// unauthenticated reports whether a verification failure means the bytes
// are not what a trusted server signed, so that the ids in them are the
// sender's word only.
func unauthenticated(err error) bool {
	switch protocol.CodeOf(err) {
	case protocol.CodeMalformed, protocol.CodeUnknownKey, protocol.CodeBadSignature, protocol.CodePayloadHashMismatch:
		return true
	}
	return false
}

// refuse signs a refused result for the dispatch and puts it in the outbox.
// d is the verified dispatch, or nil when verification failed: then the ids
// are read from the unverified raw bytes, which decoded before.
func (x *Executor) refuse(d *protocol.Dispatch, raw []byte, why error) error {
	if d == nil {
		d, _ = protocol.DecodeDispatch(raw, x.cfg.Verifier.Config().MaxBytes)
	}
	code, msg := protocol.CodeOf(why), why.Error()
	var pe *protocol.Error
	if errors.As(why, &pe) {
		msg = pe.Message
	}
	now := x.now()
	r := x.newResult(d.ID, d.IntentID)
	r.Status, r.ExitCode, r.Error = protocol.StatusRefused, -1, string(code)+": "+msg
	r.StartedAt, r.FinishedAt = formatTime(now), formatTime(now)
	b, err := x.sign(r)
	if err != nil {
		return err
	}
	x.log.Warn("dispatch refused", "dispatch", d.ID, "intent", d.IntentID, "code", string(code), "reason", msg)
	if err := x.cfg.Store.Enqueue(d.ID, b); err != nil {
		if errors.Is(err, store.ErrQueued) || errors.Is(err, store.ErrAlreadyStarted) {
			return nil // a concurrent copy of the dispatch got there first
		}
		return err
	}
	x.notify(d.ID, b, nil)
	return nil
}

func (x *Executor) notify(id string, result, output []byte) {
	if x.cfg.OnResult != nil {
		x.cfg.OnResult(store.Pending{DispatchID: id, Result: result, Output: output})
	}
}

// nodeError is a refusal decided by the node from its own state.
func nodeError(code protocol.Code, format string, args ...any) *protocol.Error {
	return &protocol.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
