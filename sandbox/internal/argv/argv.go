// Package argv expands a manifest's argv template: each template element
// becomes exactly one argv element, "{{name}}" replaced by the parameter's
// value. Nothing is split, quoted or interpreted.
package argv

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Errors of Expand; the sandbox package maps them to its own.
var (
	ErrSyntax  = errors.New("bad template")
	ErrMissing = errors.New("missing parameter")
	ErrType    = errors.New("parameter is not a string, number or boolean")
	ErrDash    = errors.New("parameter value starts with '-'")
	ErrNUL     = errors.New("parameter value contains NUL")
)

// Segment is a literal (Param == "") or a placeholder.
type Segment struct {
	Literal string
	Param   string
}

// Parse splits one template element into literals and placeholders. A
// placeholder is "{{" identifier "}}"; any other "{{" or "}}" is an error, so
// that a template never means something other than it seems to.
func Parse(tmpl string) ([]Segment, error) {
	if strings.ContainsRune(tmpl, 0) {
		return nil, fmt.Errorf("%w: contains NUL", ErrSyntax)
	}
	var segs []Segment
	rest := tmpl
	for rest != "" {
		open := strings.Index(rest, "{{")
		if open < 0 {
			if strings.Contains(rest, "}}") {
				return nil, fmt.Errorf("%w: stray }} in %q", ErrSyntax, tmpl)
			}
			segs = append(segs, Segment{Literal: rest})
			break
		}
		if strings.Contains(rest[:open], "}}") {
			return nil, fmt.Errorf("%w: stray }} in %q", ErrSyntax, tmpl)
		}
		if open > 0 {
			segs = append(segs, Segment{Literal: rest[:open]})
		}
		end := strings.Index(rest[open+2:], "}}")
		if end < 0 {
			return nil, fmt.Errorf("%w: unclosed {{ in %q", ErrSyntax, tmpl)
		}
		name := rest[open+2 : open+2+end]
		if !ident(name) {
			return nil, fmt.Errorf("%w: bad placeholder name %q", ErrSyntax, name)
		}
		segs = append(segs, Segment{Param: name})
		rest = rest[open+2+end+2:]
	}
	return segs, nil
}

func ident(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Expand fills the templates from params. A value is the string itself, the
// JSON text of a number, or "true"/"false"; anything else is refused. Unless
// allowDash, a value starting with '-' is refused wherever it lands, because
// it could become an option of the tool.
func Expand(templates []string, params map[string]jsontext.Value, allowDash bool) ([]string, error) {
	out := make([]string, 0, len(templates))
	for _, t := range templates {
		segs, err := Parse(t)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		for _, s := range segs {
			if s.Param == "" {
				b.WriteString(s.Literal)
				continue
			}
			raw, ok := params[s.Param]
			if !ok {
				return nil, fmt.Errorf("%w: %q", ErrMissing, s.Param)
			}
			v, err := scalar(raw)
			if err != nil {
				return nil, fmt.Errorf("%w: %q", err, s.Param)
			}
			if strings.ContainsRune(v, 0) {
				return nil, fmt.Errorf("%w: %q", ErrNUL, s.Param)
			}
			if !allowDash && strings.HasPrefix(v, "-") {
				return nil, fmt.Errorf("%w: %q", ErrDash, s.Param)
			}
			b.WriteString(v)
		}
		out = append(out, b.String())
	}
	return out, nil
}

func scalar(raw jsontext.Value) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", ErrType
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", ErrType
		}
		return s, nil
	case 't', 'f':
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return "", ErrType
		}
		return fmt.Sprint(b), nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var n jsontext.Value
		if err := json.Unmarshal(raw, &n); err != nil || n.Kind() != '0' {
			return "", ErrType
		}
		return string(n), nil
	}
	return "", ErrType
}
