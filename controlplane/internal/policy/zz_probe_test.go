package policy

import (
	"strings"
	"testing"
	"time"
)

func probe(t *testing.T, name, body string) {
	src := "@id(\"x\") permit (principal, action, resource) when { " + body + " };"
	start := time.Now()
	s, err := Parse([]byte(src))
	t.Logf("%s parse: %v %v", name, err, time.Since(start))
	if err != nil {
		return
	}
	start = time.Now()
	d := invoke(t, s, intent(`{}`), echoTool())
	t.Logf("%s eval: %v %v", name, d.Allow, time.Since(start))
}

func TestProbeDeep(t *testing.T) {
	probe(t, "and-chain", strings.Repeat("true && ", 120000)+"true")
	probe(t, "plus-chain", strings.Repeat("1 + ", 250000)+"1 == 1")
	probe(t, "if-chain", strings.Repeat("if true then ", 45000)+"true"+strings.Repeat(" else false", 45000))
	probe(t, "paren", strings.Repeat("(", 500000)+"true"+strings.Repeat(")", 500000))
	probe(t, "set", strings.Repeat("[", 500000)+"true"+strings.Repeat("]", 500000)+".isEmpty()")
	probe(t, "member", "context"+strings.Repeat(".a", 500000)+" == 1")
}
