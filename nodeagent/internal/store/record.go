package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
)

// recordVersion is written in every journal and outbox record, so that a
// later agent can tell an old layout from a corrupt one.
const recordVersion = 1

// Started is what the journal records before a tool runs.
type Started struct {
	DispatchID string
	IntentID   string
	Nonce      string
	ExpiresAt  time.Time
	StartedAt  time.Time
	// Dispatch is the signed dispatch exactly as received.
	Dispatch []byte
	// NonceUntil is how long Begin remembers Nonce; zero means ExpiresAt.
	NonceUntil time.Time
}

// Pending is a signed result waiting in the outbox for a server's ack, with
// the captured output it commits to by hash (sent beside it, never inside).
type Pending struct {
	DispatchID string
	Result     []byte
	Output     []byte
}

// journalRecord is the stored form of a journal entry.
type journalRecord struct {
	V          int       `json:"v"`
	DispatchID string    `json:"dispatch_id"`
	IntentID   string    `json:"intent_id"`
	Nonce      string    `json:"nonce"`
	ExpiresAt  time.Time `json:"expires_at"`
	StartedAt  time.Time `json:"started_at"`
	Dispatch   []byte    `json:"dispatch"`
	Done       bool      `json:"done"`
}

// outboxRecord is the stored form of an outbox entry.
type outboxRecord struct {
	V          int    `json:"v"`
	DispatchID string `json:"dispatch_id"`
	Result     []byte `json:"result"`
	Output     []byte `json:"output,omitzero"`
}

func (r journalRecord) started() Started {
	return Started{DispatchID: r.DispatchID, IntentID: r.IntentID, Nonce: r.Nonce,
		ExpiresAt: r.ExpiresAt, StartedAt: r.StartedAt, Dispatch: r.Dispatch}
}

func encodeRecord(v any) ([]byte, error) { return json.Marshal(v, json.Deterministic(true)) }

// decodeJournal reads a journal record strictly: unknown members, a wrong
// version or a missing id are errors, never a zero-valued entry.
func decodeJournal(b []byte) (journalRecord, error) {
	var r journalRecord
	if err := json.Unmarshal(b, &r, json.RejectUnknownMembers(true)); err != nil {
		return journalRecord{}, err
	}
	switch {
	case r.V != recordVersion:
		return journalRecord{}, fmt.Errorf("record version %d, want %d", r.V, recordVersion)
	case r.DispatchID == "":
		return journalRecord{}, errors.New("no dispatch id")
	}
	return r, nil
}

// decodeOutbox reads an outbox record strictly.
func decodeOutbox(b []byte) (outboxRecord, error) {
	var r outboxRecord
	if err := json.Unmarshal(b, &r, json.RejectUnknownMembers(true)); err != nil {
		return outboxRecord{}, err
	}
	switch {
	case r.V != recordVersion:
		return outboxRecord{}, fmt.Errorf("record version %d, want %d", r.V, recordVersion)
	case r.DispatchID == "":
		return outboxRecord{}, errors.New("no dispatch id")
	case len(r.Result) == 0:
		return outboxRecord{}, errors.New("no result")
	}
	return r, nil
}
