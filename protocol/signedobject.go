package protocol

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// span is a half-open byte range [start, end) within a canonical body.
type span struct{ start, end int }

// signedObject is the canonical form of a signed object without its "sig" member:
// exactly the JCS text that follows the domain prefix in the signing input. The
// spans locate the canonical "params" and "tool" values inside it, so that the
// payload hash is computed from the same bytes that were signed.
type signedObject struct {
	body   []byte
	params span
	tool   span
}

const (
	memberOther = iota
	memberSig
	memberParams
	memberTool
)

var (
	nameSig    = []byte(`"sig"`)
	nameParams = []byte(`"params"`)
	nameTool   = []byte(`"tool"`)
)

// canonicalSigned canonicalizes the JSON object raw and removes its top-level
// "sig" member.
func canonicalSigned(raw []byte) (signedObject, error) {
	c, top, err := canonicalTop(raw, len(raw))
	if err != nil {
		return signedObject{}, err
	}
	return withoutSig(c, top), nil
}

// withoutSig copies the canonical object c without the "sig" member top found,
// and moves the spans to match.
func withoutSig(c []byte, top topLevel) signedObject {
	obj := signedObject{params: top.params, tool: top.tool}
	if top.sig.start < 0 {
		obj.body = c
		return obj
	}
	n := top.sig.end - top.sig.start
	obj.body = make([]byte, 0, len(c)-n)
	obj.body = append(append(obj.body, c[:top.sig.start]...), c[top.sig.end:]...)
	for _, s := range [...]*span{&obj.params, &obj.tool} {
		if s.start >= top.sig.end {
			s.start -= n
			s.end -= n
		}
	}
	return obj
}

// topSpans finds the top-level "sig" member (with its separating comma) and
// the "params" and "tool" values of the canonical object c, with the JSON
// decoder: the path for canonical text the fast scanner declines, such as
// member names outside printable ASCII.
func topSpans(c []byte) (topLevel, error) {
	d := decoderPool.Get().(*jsontext.Decoder)
	defer decoderPool.Put(d)
	// c is canonical: its names are unique and its UTF-8 valid.
	d.Reset(bytes.NewReader(c), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	defer d.Reset(emptyReader)

	top := topLevel{sig: span{-1, -1}, params: span{-1, -1}, tool: span{-1, -1}}
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return top, malformed("not a JSON object")
	}
	prevEnd := 1 // just after '{'
	for d.PeekKind() == '"' {
		name, err := d.ReadValue()
		if err != nil {
			return top, malformed("invalid JSON: %v", err)
		}
		// name is only valid until the next read: classify it first.
		member := memberOther
		switch {
		case bytes.Equal(name, nameSig):
			member = memberSig
		case bytes.Equal(name, nameParams):
			member = memberParams
		case bytes.Equal(name, nameTool):
			member = memberTool
		}
		valueStart := int(d.InputOffset()) + 1 // canonical: ':' then the value
		memberStart := valueStart - 1 - len(name)
		if _, err := d.ReadValue(); err != nil {
			return top, malformed("invalid JSON: %v", err)
		}
		end := int(d.InputOffset())
		switch member {
		case memberSig:
			// The member with the comma before it, or after it when first.
			if prevEnd == 1 {
				top.sig = span{memberStart, end}
				if end < len(c)-1 {
					top.sig.end++ // the comma that follows
				}
			} else {
				top.sig = span{prevEnd, end}
			}
		case memberParams:
			top.params = span{valueStart, end}
		case memberTool:
			top.tool = span{valueStart, end}
		}
		prevEnd = end
	}
	return top, nil
}

func (o signedObject) paramsJSON() []byte { return o.body[o.params.start:o.params.end] }
func (o signedObject) toolJSON() []byte   { return o.body[o.tool.start:o.tool.end] }
