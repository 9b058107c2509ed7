// Package ledger is Writ's receipt log: an append-only RFC 6962 Merkle tree over
// receipt bytes, kept in a disk-backed Store, committed to by signed checkpoints
// (C2SP tlog-checkpoint bodies in C2SP signed notes), with inclusion and
// consistency proofs that anyone can check offline with only a verifier key.
//
// The ledger treats leaves as opaque bytes; the control plane passes JCS(receipt).
// Tree math comes from golang.org/x/mod/sumdb/tlog, signatures from
// golang.org/x/mod/sumdb/note. See docs/ledger.md for what a receipt proves.
package ledger
