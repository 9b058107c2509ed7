package fsm

import (
	"crypto/ed25519"
)

// The read methods return copies: callers may keep them while Apply goes on.

// Index returns the last applied log index: every receipt of the entries up
// to it is in the ledger.
func (rd Reader) Index() uint64 {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	return rd.f.applied
}

// Intent returns a copy of an intent's record.
func (rd Reader) Intent(id string) (Intent, bool) {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	in, ok := rd.f.state.Intents[id]
	if !ok {
		return Intent{}, false
	}
	return *in, true
}

// WatchIntent returns the intent's record and, when it exists and is not
// final, a channel closed at its next change (or after a restore), so that a
// caller can wait without polling. Watchers exist only for intents that will
// change: every waiting intent ends by its expiry, which closes and drops them.
func (rd Reader) WatchIntent(id string) (Intent, <-chan struct{}, bool) {
	in, ok := rd.Intent(id)
	if !ok || Final(in.State) {
		return in, nil, ok
	}
	ch := rd.f.watch.watch(id)
	// Read again after registering, so that no change is missed in between.
	in, ok = rd.Intent(id)
	return in, ch, ok
}

// IntentKey returns the sealed secret of an orchestrator key of a tenant.
func (rd Reader) IntentKey(tenant, keyID string) ([]byte, bool) {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	t := rd.f.state.Tenants[tenant]
	if t == nil {
		return nil, false
	}
	k, ok := t.IntentKeys[keyID]
	return k, ok
}

// ApproverKey returns a registered approver key of a tenant.
func (rd Reader) ApproverKey(tenant, keyID string) (ed25519.PublicKey, string, bool) {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	t := rd.f.state.Tenants[tenant]
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
func (rd Reader) Tool(name string) (Tool, bool) {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	t, ok := rd.f.state.Tools[name]
	if !ok {
		return Tool{}, false
	}
	return *t, true
}

// Tools returns every registered tool, by name.
func (rd Reader) Tools() []Tool {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	out := make([]Tool, 0, len(rd.f.state.Tools))
	for _, name := range sortedKeys(rd.f.state.Tools) {
		out = append(out, *rd.f.state.Tools[name])
	}
	return out
}

// Policy returns the current policy set's text and hash.
func (rd Reader) Policy() PutPolicy {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	return rd.f.state.Policy
}

// NonceConsumed reports whether an approval nonce has been used.
func (rd Reader) NonceConsumed(nonce string) bool {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	_, ok := rd.f.state.Nonces[nonce]
	return ok
}

// CheckpointChanged returns a channel closed when the next checkpoint is applied.
func (rd Reader) CheckpointChanged() <-chan struct{} { return rd.f.watch.watch(CheckpointWatch) }
