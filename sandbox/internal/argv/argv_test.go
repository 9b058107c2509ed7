package argv

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestParse: a template element is literals and {{identifier}} placeholders;
// any other use of {{ or }} is a syntax error.
func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tmpl string
		want []Segment // nil with ok false: refused
		ok   bool
	}{
		{"", nil, true},
		{"ls", []Segment{{Literal: "ls"}}, true},
		{"{{path}}", []Segment{{Param: "path"}}, true},
		{"--out={{dir}}/x", []Segment{{Literal: "--out="}, {Param: "dir"}, {Literal: "/x"}}, true},
		{"{{a}}{{b_2}}", []Segment{{Param: "a"}, {Param: "b_2"}}, true},
		{"{{_}}", []Segment{{Param: "_"}}, true},
		{"a{b}c", []Segment{{Literal: "a{b}c"}}, true},
		{"{{" + strings.Repeat("x", 64) + "}}", []Segment{{Param: strings.Repeat("x", 64)}}, true},
		{"{{" + strings.Repeat("x", 65) + "}}", nil, false},
		{"{{", nil, false},
		{"}}", nil, false},
		{"a}}{{b}}", nil, false},
		{"{{a}}}}", nil, false},
		{"{{a}", nil, false},
		{"{{}}", nil, false},
		{"{{ a }}", nil, false},
		{"{{1a}}", nil, false},
		{"{{a-b}}", nil, false},
		{"{{a.b}}", nil, false},
		{"{{{a}}}", nil, false},
		{"{{é}}", nil, false},
		{"a\x00b", nil, false},
	} {
		got, err := Parse(tc.tmpl)
		if !tc.ok {
			if !errors.Is(err, ErrSyntax) {
				t.Errorf("Parse(%q) = %+v, %v; want ErrSyntax", tc.tmpl, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.tmpl, got, err, tc.want)
		}
	}
}

// TestExpand: each template element becomes exactly one argv element;
// strings stand as they are (spaces, quotes, globs and $ included), numbers
// as their JSON text, booleans as true/false; anything else, a missing
// parameter, NUL, or (unless allowed) a leading '-' is refused.
func TestExpand(t *testing.T) {
	t.Parallel()
	params := map[string]jsontext.Value{
		"s":      jsontext.Value(`"a b; rm -rf / $(x) *"`),
		"n":      jsontext.Value(`42`),
		"f":      jsontext.Value(` 1.5e3 `),
		"neg":    jsontext.Value(`-3`),
		"t":      jsontext.Value(`true`),
		"no":     jsontext.Value(`false`),
		"dash":   jsontext.Value(`"--help"`),
		"esc":    jsontext.Value(`"\u002dx"`),
		"nul":    jsontext.Value(`"a\u0000b"`),
		"empty":  jsontext.Value(`""`),
		"null":   jsontext.Value(`null`),
		"obj":    jsontext.Value(`{"a":1}`),
		"arr":    jsontext.Value(`["a"]`),
		"blank":  jsontext.Value(``),
		"tru":    jsontext.Value(`tru`),
		"badnum": jsontext.Value(`1e`),
		"badstr": jsontext.Value(`"abc`),
		"inner":  jsontext.Value(`"x-y"`),
	}
	for _, tc := range []struct {
		name      string
		tmpl      []string
		allowDash bool
		want      []string
		err       error
	}{
		{"literals", []string{"-l", "--", "x"}, false, []string{"-l", "--", "x"}, nil},
		{"string with shell syntax stays one element", []string{"{{s}}"}, false, []string{"a b; rm -rf / $(x) *"}, nil},
		{"number", []string{"--n={{n}}", "{{f}}"}, false, []string{"--n=42", "1.5e3"}, nil},
		{"booleans", []string{"{{t}}/{{no}}"}, false, []string{"true/false"}, nil},
		{"empty string", []string{"{{empty}}"}, false, []string{""}, nil},
		{"dash inside a value", []string{"{{inner}}"}, false, []string{"x-y"}, nil},
		{"dash refused", []string{"{{dash}}"}, false, nil, ErrDash},
		{"escaped dash refused", []string{"{{esc}}"}, false, nil, ErrDash},
		{"negative number refused", []string{"{{neg}}"}, false, nil, ErrDash},
		{"dash refused after a literal too", []string{"x={{dash}}"}, false, nil, ErrDash},
		{"dash allowed", []string{"{{dash}}", "{{neg}}"}, true, []string{"--help", "-3"}, nil},
		{"NUL", []string{"{{nul}}"}, true, nil, ErrNUL},
		{"missing", []string{"ok", "{{nope}}"}, false, nil, ErrMissing},
		{"null", []string{"{{null}}"}, false, nil, ErrType},
		{"object", []string{"{{obj}}"}, false, nil, ErrType},
		{"array", []string{"{{arr}}"}, false, nil, ErrType},
		{"blank", []string{"{{blank}}"}, false, nil, ErrType},
		{"bad literal", []string{"{{tru}}"}, false, nil, ErrType},
		{"bad number", []string{"{{badnum}}"}, false, nil, ErrType},
		{"bad string", []string{"{{badstr}}"}, false, nil, ErrType},
		{"bad template", []string{"{{s}", "x"}, false, nil, ErrSyntax},
		{"no templates", nil, false, []string{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Expand(tc.tmpl, params, tc.allowDash)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || got != nil {
					t.Fatalf("Expand = %q, %v; want %v", got, err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) || got == nil {
				t.Fatalf("Expand = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
