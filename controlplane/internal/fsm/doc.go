// Package fsm is the control plane's deterministic state machine: the one place
// where intents are admitted, approved and expired, applied identically on every
// replica from the Raft log.
//
// Every decision that could differ between replicas — the time, the policy
// outcome, the policy set's hash — is made by the leader before it proposes an
// entry, and travels inside the entry. Apply never reads the clock, the network
// or randomness, and iterates maps only in sorted order, so that replaying the
// same log into a fresh FSM gives byte-identical state.
package fsm
