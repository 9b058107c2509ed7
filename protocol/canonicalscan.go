package protocol

import (
	"bytes"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// topLevel locates members of a canonical top-level object: the whole "sig"
// member with the comma that separates it, and the "params" and "tool" values.
type topLevel struct {
	sig, params, tool span
}

// scanCanonical reports whether the JSON text b is already in RFC 8785 form, and
// if so where its top-level members are. It is safe on any input, but only
// meaningful on valid JSON: a yes for b that is not valid JSON means nothing, so
// the caller validates b after a yes. It is a recognizer, not an
// encoder: it only answers yes when it can tell cheaply, and says no (so that the
// caller canonicalizes with the library) for anything unusual, such as member
// names outside printable ASCII. The property tested and fuzzed is: whenever it
// answers yes, Canonicalize(b) == b.
//
// Canonical input is what Writ's own client and CLI send, so this path makes the
// common case skip a second encoding of the whole object.
func scanCanonical(b []byte) (topLevel, bool) {
	top := topLevel{sig: span{-1, -1}, params: span{-1, -1}, tool: span{-1, -1}}
	// The stack of open containers: for objects, the last member name seen.
	type frame struct {
		object   bool
		lastName span
	}
	var stackBuf [32]frame
	stack := stackBuf[:0]
	expectName := false
	var member int      // which top-level member the current value belongs to
	var memberStart int // where the current top-level member's name starts
	prevEnd := -1       // where the previous top-level member's value ended
	var numBuf [32]byte

	endValue := func(end int) {
		if len(stack) != 1 {
			return
		}
		switch member {
		case memberSig:
			if prevEnd < 0 {
				top.sig = span{memberStart, end}
				if end < len(b)-1 {
					top.sig.end++ // the comma that follows
				}
			} else {
				top.sig = span{prevEnd, end}
			}
		case memberParams:
			top.params.end = end
		case memberTool:
			top.tool.end = end
		}
		prevEnd = end
	}

	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '{', '[':
			if len(stack) == len(stackBuf) {
				return top, false // deep nesting: let the library decide
			}
			stack = append(stack, frame{object: c == '{', lastName: span{-1, -1}})
			expectName = c == '{'
		case '}', ']':
			if len(stack) == 0 {
				return top, false
			}
			stack = stack[:len(stack)-1]
			expectName = false
			endValue(i + 1)
		case ',':
			expectName = len(stack) > 0 && stack[len(stack)-1].object
		case ':':
		case '"':
			start := i
			end, ok := scanCanonicalString(b, i)
			if !ok {
				return top, false
			}
			i = end - 1
			if expectName && len(stack) > 0 {
				f := &stack[len(stack)-1]
				name := b[start+1 : end-1]
				if !printableASCII(name) {
					return top, false
				}
				if f.lastName.start >= 0 && bytes.Compare(b[f.lastName.start:f.lastName.end], name) >= 0 {
					return top, false // out of order (or a duplicate)
				}
				f.lastName = span{start + 1, end - 1}
				expectName = false
				if len(stack) == 1 {
					memberStart = start
					member = memberOther
					switch string(name) {
					case "sig":
						member = memberSig
					case "params":
						member = memberParams
						top.params.start = end + 1
					case "tool":
						member = memberTool
						top.tool.start = end + 1
					}
				}
				continue
			}
			endValue(end)
		case 't', 'n', 'f':
			// true, null, false: the caller validates the letters.
			i += 3
			if c == 'f' {
				i++
			}
			if i >= len(b) {
				return top, false
			}
			endValue(i + 1)
		default:
			if c != '-' && (c < '0' || c > '9') {
				return top, false // whitespace, which canonical JSON never has
			}
			j := i + 1
			for j < len(b) && isNumberByte(b[j]) {
				j++
			}
			if !canonicalNumber(b[i:j], numBuf[:0]) {
				return top, false
			}
			i = j - 1
			endValue(j)
		}
	}
	return top, true
}

// scanCanonicalString returns the end (after the closing quote) of the string
// starting at b[i], and whether it is written as JCS writes strings: only the
// escapes \" \\ \b \f \n \r \t and \u00XX (lowercase) for other control characters.
func scanCanonicalString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '"':
			return i + 1, true
		case '\\':
			i++
			if i >= len(b) {
				return 0, false
			}
			switch b[i] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || b[i+1] != '0' || b[i+2] != '0' || (b[i+3] != '0' && b[i+3] != '1') || !lowerHex(b[i+4]) {
					return 0, false
				}
				switch string(b[i+3 : i+5]) {
				case "08", "09", "0a", "0c", "0d":
					return 0, false // these have short forms
				}
				i += 4
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

func lowerHex(c byte) bool { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') }

func printableASCII(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c > 0x7e || c == '\\' || c == '"' {
			return false
		}
	}
	return true
}

// canonicalNumber reports whether the number text v is an I-JSON number already
// written in JCS (ECMAScript) form.
func canonicalNumber(v, buf []byte) bool {
	if checkNumber(v) != nil {
		return false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || (f == 0 && v[0] == '-') {
		return false
	}
	return bytes.Equal(jsontext.AppendFloat(buf, f, 64), v)
}
