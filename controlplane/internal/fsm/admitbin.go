package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/controlplane/internal/varint"
	"github.com/writhq/writ/protocol"
)

// MsgAdmitBinary is an Admit in a binary encoding. Every replica decodes every
// admission, and decoding the JSON one (MsgAdmit) was the largest part of
// applying it; the leader proposes this one. MsgAdmit entries already in a log
// are still applied as before.
//
// The body (after the type byte) is, in order: at; the canonical signed
// intent; id, tenant, principal, run_id, tool, payload_hash, idempotency_key;
// expires_at; the target (0, or 1 then node, then 0 for no labels or the count
// of labels plus one and each label's key and value, keys in increasing
// order); the decision (a flags byte, 1 allow, 2 approval required, 4 the
// number of approvers follows, 8 the check index follows; that number, from 2
// to MaxApprovals, when flagged; the check index, not 0, when flagged;
// policy_hash; the count of policies and each policy; 0, or 1 then the error's
// code and message). Entries written before a flag existed lack it and decode
// as before: a check index of 0. A time is its Unix seconds as a signed varint
// then its nanoseconds as an unsigned one; a string or byte string is its
// length as an unsigned varint, then its bytes. Varints are in their shortest form and
// nothing follows the decision, so an Admit has one encoding.
const MsgAdmitBinary MsgType = 21

// Times are kept to the years 0 to 9999: what RFC 3339, and so the JSON of
// snapshots, can write.
var (
	minTime = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
)

// EncodeAdmit returns the MsgAdmitBinary entry of c. It refuses what the FSM
// could not decode, or could decode but not snapshot: a time outside the years
// 0 to 9999, a string that is not UTF-8, an intent that is not one valid JSON
// value — as encoding the JSON admit refuses them — so that no entry in the log
// stops a replica.
func EncodeAdmit(c *Admit) ([]byte, error) {
	for _, t := range []time.Time{c.At, c.ExpiresAt} {
		if s := t.Unix(); s < minTime || s > maxTime {
			return nil, errors.New("fsm: a time outside the years 0 to 9999")
		}
	}
	if !c.Intent.IsValid() {
		return nil, errors.New("fsm: the intent of an admit is not valid JSON")
	}
	if n := c.Decision.Approvals; n < 0 || n == 1 || n > MaxApprovals || (n > 1 && !(c.Decision.Allow && c.Decision.ApprovalRequired)) {
		return nil, fmt.Errorf("fsm: %d approvers: 0 (one approval) or 2 to %d, and only for an allowed intent that waits for approval", n, MaxApprovals)
	}
	strs := []string{c.ID, c.Tenant, c.Principal, c.RunID, c.Tool, c.PayloadHash, c.IdempotencyKey, c.Decision.PolicyHash}
	strs = append(strs, c.Decision.Policies...)
	if c.Target != nil {
		strs = append(strs, c.Target.Node)
		for k, v := range c.Target.Labels {
			strs = append(strs, k, v)
		}
	}
	if c.Decision.Error != nil {
		strs = append(strs, string(c.Decision.Error.Code), c.Decision.Error.Message)
	}
	for _, s := range strs {
		if !utf8.ValidString(s) {
			return nil, errors.New("fsm: a string of an admit is not UTF-8")
		}
	}
	b := make([]byte, 0, 64+len(c.Intent)+len(c.ID)+len(c.Tenant)+len(c.Principal)+len(c.RunID)+len(c.Tool)+
		len(c.PayloadHash)+len(c.IdempotencyKey)+len(c.Decision.PolicyHash)+32*len(c.Decision.Policies))
	b = append(b, byte(MsgAdmitBinary))
	b = appendTime(b, c.At)
	b = varint.AppendBytes(b, c.Intent)
	for _, s := range []string{c.ID, c.Tenant, c.Principal, c.RunID, c.Tool, c.PayloadHash, c.IdempotencyKey} {
		b = varint.AppendBytes(b, s)
	}
	b = appendTime(b, c.ExpiresAt)
	if c.Target == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = varint.AppendBytes(b, c.Target.Node)
		if c.Target.Labels == nil {
			b = append(b, 0)
		} else {
			b = binary.AppendUvarint(b, uint64(len(c.Target.Labels))+1)
		}
		for _, k := range slices.Sorted(maps.Keys(c.Target.Labels)) {
			b = varint.AppendBytes(b, k)
			b = varint.AppendBytes(b, c.Target.Labels[k])
		}
	}
	d := &c.Decision
	var flags byte
	if d.Allow {
		flags |= 1
	}
	if d.ApprovalRequired {
		flags |= 2
	}
	if d.Approvals > 1 {
		flags |= 4 // the number of approvers follows
	}
	if c.CheckIndex != 0 {
		flags |= 8 // the check index follows
	}
	b = append(b, flags)
	if d.Approvals > 1 {
		b = binary.AppendUvarint(b, uint64(d.Approvals))
	}
	if c.CheckIndex != 0 {
		b = binary.AppendUvarint(b, c.CheckIndex)
	}
	b = varint.AppendBytes(b, d.PolicyHash)
	b = binary.AppendUvarint(b, uint64(len(d.Policies)))
	for _, p := range d.Policies {
		b = varint.AppendBytes(b, p)
	}
	if d.Error == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = varint.AppendBytes(b, string(d.Error.Code))
		b = varint.AppendBytes(b, d.Error.Message)
	}
	return b, nil
}

func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

// errAdmit is why a MsgAdmitBinary body does not decode.
var errAdmit = errors.New("fsm: malformed binary admit entry")

// decodeAdmit reads a MsgAdmitBinary body (the entry without its type byte).
// It accepts exactly what EncodeAdmit makes: every string valid UTF-8, the
// intent one valid JSON value (checked, not parsed: the leader verified it and
// proposes its canonical form). The intent is copied; the strings are new.
func decodeAdmit(data []byte) (*Admit, error) {
	r := admitReader{b: data}
	c := &Admit{At: r.time()}
	if intent := jsontext.Value(r.bytes()); intent.IsValid() {
		c.Intent = slices.Clone(intent)
	} else {
		r.fail()
	}
	for _, s := range []*string{&c.ID, &c.Tenant, &c.Principal, &c.RunID, &c.Tool, &c.PayloadHash, &c.IdempotencyKey} {
		*s = r.string()
	}
	c.ExpiresAt = r.time()
	switch r.byte() {
	case 0:
	case 1:
		c.Target = &protocol.Target{Node: r.string()}
		if n := r.count(2, 1); n >= 0 {
			c.Target.Labels = make(map[string]string, n)
			last := ""
			for i := range n {
				k, v := r.string(), r.string()
				if i > 0 && k <= last {
					r.fail() // keys in increasing order: one encoding
				}
				c.Target.Labels[k], last = v, k
			}
		}
	default:
		r.fail()
	}
	flags := r.byte()
	if flags&^15 != 0 {
		r.fail()
	}
	c.Decision = Decision{Allow: flags&1 != 0, ApprovalRequired: flags&2 != 0}
	if flags&4 != 0 && flags&3 != 3 {
		r.fail() // approvers of an intent that waits for none
	}
	if flags&4 != 0 {
		// Present only for more than one, and at most MaxApprovals: one
		// encoding, and nothing the JSON admit would not carry.
		if n := r.uvarint(); n >= 2 && n <= MaxApprovals {
			c.Decision.Approvals = int(n)
		} else {
			r.fail()
		}
	}
	if flags&8 != 0 {
		// Present only when not 0: one encoding.
		if c.CheckIndex = r.uvarint(); c.CheckIndex == 0 {
			r.fail()
		}
	}
	c.Decision.PolicyHash = r.string()
	// Never nil, as from JSON.
	c.Decision.Policies = make([]string, max(r.count(1, 0), 0))
	for i := range c.Decision.Policies {
		c.Decision.Policies[i] = r.string()
	}
	switch r.byte() {
	case 0:
	case 1:
		c.Decision.Error = &protocol.ErrorBody{Code: protocol.Code(r.string()), Message: r.string()}
	default:
		r.fail()
	}
	if r.err || len(r.b) != 0 {
		return nil, errAdmit
	}
	return c, nil
}

// admitReader reads a binary admit; after the first error every read returns
// a zero value and err stays set.
type admitReader struct {
	b   []byte
	err bool
}

func (r *admitReader) fail() { r.err, r.b = true, nil }

func (r *admitReader) uvarint() uint64 {
	v, k := varint.Uvarint(r.b)
	if k <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[k:]
	return v
}

// count reads a count of items each at least min bytes long, written plus
// offset; it refuses a count the rest of the body could not hold, and returns
// -1 for a written value below offset (none at all, as against zero items).
func (r *admitReader) count(min int, offset uint64) int {
	n := r.uvarint()
	if n < offset {
		return -1
	}
	if n -= offset; n > uint64(len(r.b)/min) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *admitReader) bytes() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

func (r *admitReader) string() string {
	s := r.bytes()
	if !utf8.Valid(s) {
		r.fail()
		return ""
	}
	return string(s)
}

func (r *admitReader) byte() byte {
	if len(r.b) == 0 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *admitReader) time() time.Time {
	sec, k := varint.Varint(r.b)
	if k <= 0 || sec < minTime || sec > maxTime {
		r.fail()
		return time.Time{}
	}
	r.b = r.b[k:]
	nsec := r.uvarint()
	if nsec >= uint64(time.Second) {
		r.fail()
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}
