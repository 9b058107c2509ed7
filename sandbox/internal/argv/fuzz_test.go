package argv

import (
	"strings"
	"testing"
)

// FuzzParse: an accepted template is exactly its segments put back
// together, no literal hides a {{ or }}, and every name is an identifier.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "ls", "{{a}}", "--x={{b}}/y", "{{", "}}", "{{a}", "a}}{{b}}", "{{{a}}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tmpl string) {
		segs, err := Parse(tmpl)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, s := range segs {
			if s.Param != "" {
				if s.Literal != "" || !ident(s.Param) {
					t.Fatalf("Parse(%q): bad placeholder segment %+v", tmpl, s)
				}
				b.WriteString("{{" + s.Param + "}}")
				continue
			}
			if s.Literal == "" || strings.Contains(s.Literal, "{{") || strings.Contains(s.Literal, "}}") {
				t.Fatalf("Parse(%q): bad literal segment %q", tmpl, s.Literal)
			}
			b.WriteString(s.Literal)
		}
		if b.String() != tmpl {
			t.Fatalf("Parse(%q) put back together is %q", tmpl, b.String())
		}
	})
}
