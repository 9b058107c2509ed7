package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/go-json-experiment/json/jsontext"
)

// Limits on the JSON a request may carry into Cedar. Both are far above what a
// tool call needs; they exist because cedar-go evaluates and hashes values
// recursively, and because building a Cedar set costs time quadratic in the
// number of its elements whose hashes collide (see TestConvertCollidingSet).
// Past a limit the request is refused, never truncated: a silently shortened
// input could hide the very member a forbid policy looks for.
const (
	// MaxDepth is the deepest nesting of objects and arrays accepted; the
	// top-level object is depth 1.
	MaxDepth = 32
	// MaxValues is how many JSON values (scalars, objects and arrays) one
	// request may hold, params and intent context together.
	MaxValues = 4096
)

// converter maps JSON text onto Cedar values. It counts values across calls so
// that one budget covers a whole request.
type converter struct {
	values int
}

// object converts the JSON text raw, which must be one JSON object, into a
// Cedar record. The mapping (docs/policy.md, "Values") is deterministic: it
// depends only on the JSON values, not on their spelling, member order or
// whitespace, so the same canonical intent always gives the same record.
func (c *converter) object(raw []byte) (cedar.Record, error) {
	// A bytes.Buffer is read in place, without the decoder's own copy; the
	// decoder only reads it, so raw is not changed.
	dec := jsontext.NewDecoder(bytes.NewBuffer(raw))
	if dec.PeekKind() != '{' {
		if _, err := dec.ReadToken(); err != nil {
			return cedar.Record{}, fmt.Errorf("%w: %v", ErrJSON, err)
		}
		return cedar.Record{}, ErrNotObject
	}
	v, _, err := c.value(dec, 1)
	if err != nil {
		return cedar.Record{}, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return cedar.Record{}, fmt.Errorf("%w: data after the top-level value", ErrJSON)
	}
	return v.(cedar.Record), nil
}

// value reads one JSON value at the given depth. ok is false for null, which
// has no Cedar counterpart: the caller leaves the member or element out.
func (c *converter) value(dec *jsontext.Decoder, depth int) (v cedar.Value, ok bool, err error) {
	if c.values++; c.values > MaxValues {
		return nil, false, ErrTooManyValues
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrJSON, err)
	}
	switch tok.Kind() {
	case 'n':
		return nil, false, nil
	case 't', 'f':
		return cedar.Boolean(tok.Bool()), true, nil
	case '"':
		return cedar.String(tok.String()), true, nil
	case '0':
		v, err := number(tok.String())
		return v, err == nil, err
	case '{':
		if depth > MaxDepth {
			return nil, false, ErrTooDeep
		}
		return c.record(dec, depth)
	case '[':
		if depth > MaxDepth {
			return nil, false, ErrTooDeep
		}
		return c.set(dec, depth)
	}
	// The decoder only hands out the kinds above at a value position.
	return nil, false, fmt.Errorf("%w: unexpected token %v", ErrJSON, tok.Kind())
}

func (c *converter) record(dec *jsontext.Decoder, depth int) (cedar.Value, bool, error) {
	m := cedar.RecordMap{}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, false, fmt.Errorf("%w: %v", ErrJSON, err)
		}
		// The token is only valid until the next read.
		name := cedar.String(tok.String())
		v, ok, err := c.value(dec, depth+1)
		if err != nil {
			return nil, false, err
		}
		if ok {
			m[name] = v
		}
	}
	if err := closeToken(dec); err != nil {
		return nil, false, err
	}
	return cedar.NewRecord(m), true, nil
}

func (c *converter) set(dec *jsontext.Decoder, depth int) (cedar.Value, bool, error) {
	var elems []cedar.Value
	for dec.PeekKind() != ']' {
		v, ok, err := c.value(dec, depth+1)
		if err != nil {
			return nil, false, err
		}
		if ok {
			elems = append(elems, v)
		}
	}
	if err := closeToken(dec); err != nil {
		return nil, false, err
	}
	return cedar.NewSet(elems...), true, nil
}

// closeToken consumes the '}' or ']' that PeekKind announced, or reports the
// syntax error that made PeekKind return 0 instead.
func closeToken(dec *jsontext.Decoder) error {
	if _, err := dec.ReadToken(); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("%w: %v", ErrJSON, err)
	}
	return nil
}
