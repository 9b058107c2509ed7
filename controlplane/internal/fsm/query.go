package fsm

import (
	"crypto/ed25519"
)

// The read methods return copies: callers may keep them while Apply goes on.

// Index returns the last applied log index: every receipt of the entries up
// to it is in the ledger.
func (f *FSM) Index() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.applied
}

// Intent returns a copy of an intent's record.
func (f *FSM) Intent(id string) (Intent, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	in, ok := f.state.Intents[id]
	if !ok {
		return Intent{}, false
	}
	return *in, true
}

// WatchIntent returns the intent's record and, when it exists and is not
// final, a channel closed at its next change (or after a restore), so that a
// caller can wait without polling. Watchers exist only for intents that will
// change: every waiting intent ends by its expiry, which closes and drops them.
func (f *FSM) WatchIntent(id string) (Intent, <-chan struct{}, bool) {
	in, ok := f.Intent(id)
	if !ok || Final(in.State) {
		return in, nil, ok
	}
	ch := f.watch.watch(id)
	// Read again after registering, so that no change is missed in between.
	in, ok = f.Intent(id)
	return in, ch, ok
}

// IntentKey returns the sealed secret of an orchestrator key of a tenant.
func (f *FSM) IntentKey(tenant, keyID string) ([]byte, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	t := f.state.Tenants[tenant]
	if t == nil {
		return nil, false
	}
	k, ok := t.IntentKeys[keyID]
	return k, ok
}

// ApproverKey returns a registered approver key of a tenant.
func (f *FSM) ApproverKey(tenant, keyID string) (ed25519.PublicKey, string, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	t := f.state.Tenants[tenant]
	if t == nil {
		return nil, "", false
	}
	k, ok := t.ApproverKeys[keyID]
	if !ok {
		return nil, "", false
	}
	return ed25519.PublicKey(k.Public), k.Approver, true
}

// Tool returns a registered tool.
func (f *FSM) Tool(name string) (Tool, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	t, ok := f.state.Tools[name]
	if !ok {
		return Tool{}, false
	}
	return *t, true
}

// Tools returns every registered tool, by name.
func (f *FSM) Tools() []Tool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]Tool, 0, len(f.state.Tools))
	for _, name := range sortedKeys(f.state.Tools) {
		out = append(out, *f.state.Tools[name])
	}
	return out
}

// Policy returns the current policy set's text and hash.
func (f *FSM) Policy() PutPolicy {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state.Policy
}

// NonceConsumed reports whether an approval nonce has been used.
func (f *FSM) NonceConsumed(nonce string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	_, ok := f.state.Nonces[nonce]
	return ok
}

// CheckpointChanged returns a channel closed when the next checkpoint is applied.
func (f *FSM) CheckpointChanged() <-chan struct{} { return f.watch.watch(CheckpointWatch) }
