// Package fsm is the control plane's deterministic state machine: the one place
// where intents are admitted, approved and expired, applied identically on every
// replica from the Raft log.
//
// Every decision that could differ between replicas — the time, the policy
// outcome, the policy set's hash — is made by the leader before it proposes an
// entry, and travels inside the entry. Apply never reads the clock, the network
// or randomness, and iterates maps only in sorted order, so that replaying the
// same log into a fresh FSM gives byte-identical state.
//
// The package has two sides. The apply side is FSM: Apply and ApplyBatch
// (fsm.go, batch.go) decode an entry's one-byte MsgType (command.go) and hand
// it to one apply function per type (admit.go, approve.go, results.go, ...),
// and Snapshot and Restore (snapshot.go); the apply functions place and
// expire queued intents through scheduler (dispatch.go, sched.go) and
// record receipts in the ledger through recorder (receipts.go, batch.go). The read side is Reader (reader.go),
// obtained with FSM.Reader: every lookup, listing and view the control plane
// reads (query.go, nodequery.go, dashquery.go, users.go, ...), under the read
// lock, never changing anything.
package fsm
