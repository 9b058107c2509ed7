package protocol

import (
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// maxExactInteger is the largest integer JCS writes as the same digits: 2^53.
// A larger uint64 becomes a double, which the general path refuses or rounds.
const maxExactInteger = 1 << 53

// leafSlow is JCS(receipt) by the general path: encode with the library, then
// canonicalize (re-parse, sort the members, reformat the numbers).
func (r *Receipt) leafSlow() ([]byte, error) {
	b, err := json.Marshal(r, json.Deterministic(true))
	if err != nil {
		return nil, malformed("%v", err)
	}
	return Canonicalize(b)
}

// appendLeaf appends JCS(r) to dst, writing the members in their sorted
// order directly, as the ledger appends one leaf per receipt on every server.
// It answers false, and the caller takes leafSlow, for anything it does not
// write itself: invalid UTF-8 in a string, an integer above 2^53, or a result
// that is not already canonical JSON. Whenever it answers true its bytes are
// leafSlow's (TestReceiptLeafFastPath, FuzzReceiptLeaf).
func (r *Receipt) appendLeaf(dst []byte) ([]byte, bool) {
	w := leafWriter{b: dst, ok: true}
	// Member names in RFC 8785 order (all ASCII, so byte order).
	w.raw(`{"approval":`)
	w.approval(r.Approval)
	if r.Approvals != nil {
		w.raw(`,"approvals":[`)
		for i := range r.Approvals {
			if i > 0 {
				w.raw(",")
			}
			w.approval(&r.Approvals[i])
		}
		w.raw("]")
	}
	w.raw(`,"dispatch":`)
	if d := r.Dispatch; d == nil {
		w.raw("null")
	} else {
		w.raw(`{"fence":`)
		w.uint(d.Fence)
		w.raw(`,"id":`)
		w.str(d.ID)
		w.raw(`,"node":`)
		w.str(d.Node)
		w.raw("}")
	}
	if e := r.Error; e != nil {
		w.raw(`,"error":{"code":`)
		w.str(string(e.Code))
		w.raw(`,"message":`)
		w.str(e.Message)
		w.raw("}")
	}
	w.raw(`,"idempotency_key":`)
	w.str(r.IdempotencyKey)
	w.raw(`,"index":`)
	w.uint(r.Index)
	w.raw(`,"intent_id":`)
	w.str(r.IntentID)
	w.raw(`,"outcome":`)
	w.str(r.Outcome)
	w.raw(`,"payload_hash":`)
	w.str(r.PayloadHash)
	w.raw(`,"policy":`)
	if p := r.Policy; p == nil {
		w.raw("null")
	} else {
		w.raw(`{"decision":`)
		w.str(p.Decision)
		w.raw(`,"hash":`)
		w.str(p.Hash)
		w.raw(`,"policies":[`)
		for i, id := range p.Policies {
			if i > 0 {
				w.raw(",")
			}
			w.str(id)
		}
		w.raw("]}")
	}
	w.raw(`,"principal":`)
	w.str(r.Principal)
	w.raw(`,"recorded_at":`)
	w.str(r.RecordedAt)
	w.raw(`,"result":`)
	if r.Result == nil { // an empty Value that is not nil is no JSON: the encoder refuses it
		w.raw("null")
	} else if isCanonical(r.Result) {
		w.b = append(w.b, r.Result...)
	} else {
		w.ok = false
	}
	if r.Supersedes != nil {
		w.raw(`,"supersedes":`)
		w.uint(*r.Supersedes)
	}
	w.raw(`,"tenant":`)
	w.str(r.Tenant)
	w.raw(`,"tool":`)
	w.str(r.Tool)
	w.raw(`,"type":`)
	w.str(r.Type)
	w.raw("}")
	return w.b, w.ok
}

// leafSizeHint is about the length of r's leaf, so that appendLeaf writes it
// into one allocation: the member names and punctuation, the strings and the
// result (escapes aside).
func (r *Receipt) leafSizeHint() int {
	n := 400 + len(r.Result) + len(r.IntentID) + len(r.Tenant) + len(r.Principal) + len(r.Tool) +
		len(r.PayloadHash) + len(r.IdempotencyKey) + len(r.RecordedAt)
	if r.Policy != nil {
		n += len(r.Policy.Hash) + len(r.Policy.Decision)
		for _, p := range r.Policy.Policies {
			n += len(p) + 3
		}
	}
	if r.Dispatch != nil {
		n += len(r.Dispatch.ID) + len(r.Dispatch.Node)
	}
	if r.Error != nil {
		n += len(r.Error.Code) + len(r.Error.Message)
	}
	if a := r.Approval; a != nil {
		n += len(a.ID) + len(a.Approver) + len(a.Hash)
	}
	for _, a := range r.Approvals {
		n += len(a.ID) + len(a.Approver) + len(a.Hash) + 40
	}
	return n
}

// isCanonical reports whether b is valid JSON already in RFC 8785 form, as
// canonicalTop decides it: Canonicalize(b) would return b unchanged.
func isCanonical(b []byte) bool {
	_, ok := scanCanonical(b)
	return ok && jsontext.Value(b).IsValid(jsontext.AllowDuplicateNames(true))
}

// leafWriter appends canonical JSON; ok turns false at the first value it
// cannot write as the general path would, and stays false.
type leafWriter struct {
	b  []byte
	ok bool
}

func (w *leafWriter) raw(s string) { w.b = append(w.b, s...) }

func (w *leafWriter) str(s string) {
	var err error
	if w.b, err = jsontext.AppendQuote(w.b, s); err != nil {
		w.ok = false // invalid UTF-8, which the library's encoder refuses
	}
}

func (w *leafWriter) uint(n uint64) {
	if n > maxExactInteger {
		w.ok = false
		return
	}
	w.b = strconv.AppendUint(w.b, n, 10)
}

func (w *leafWriter) approval(a *ApprovalRef) {
	if a == nil {
		w.raw("null")
		return
	}
	w.raw(`{"approver":`)
	w.str(a.Approver)
	w.raw(`,"hash":`)
	w.str(a.Hash)
	w.raw(`,"id":`)
	w.str(a.ID)
	w.raw("}")
}
