package protocol_test

import (
	"bytes"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/writhq/writ/protocol"
)

// canonicalCases are inputs with their RFC 8785 forms, covering member order by
// UTF-16 code units, number forms, string escapes and nesting.
var canonicalCases = []struct{ in, want string }{
	{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
	{` { "a" : [ 1 , 2 ] } `, `{"a":[1,2]}`},
	{`{"\u20ac":1,"\ud83d\ude80":2,"\uffff":3,"a":0}`, `{"a":0,"€":1,"🚀":2,"￿":3}`},
	{`{"n":[1.50,1e3,-0,1e-7,1e21,0.000001,123456789012345680000]}`, `{"n":[1.5,1000,0,1e-7,1e+21,0.000001,123456789012345680000]}`},
	{`{"s":"\u0008\t\n\u000c\r\u0001\u001f\"\\\/\u007f\u2028<&>"}`, `{"s":"\b\t\n\f\r\u0001\u001f\"\\/` + "\x7f\u2028" + `<&>"}`},
	{`{"z":{"y":{"x":[{"b":null,"a":true}]}}}`, `{"z":{"y":{"x":[{"a":true,"b":null}]}}}`},
	{`[]`, `[]`},
	{`"x"`, `"x"`},
	{`{"big":9007199254740991,"neg":-9007199254740991}`, `{"big":9007199254740991,"neg":-9007199254740991}`},
}

func TestCanonicalize(t *testing.T) {
	t.Parallel()
	for _, c := range canonicalCases {
		got, err := protocol.Canonicalize([]byte(c.in))
		if err != nil {
			t.Errorf("Canonicalize(%s): %v", c.in, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("Canonicalize(%s):\n got %s\nwant %s", c.in, got, c.want)
		}
		ref, err := jcs.Transform([]byte(c.in))
		if err != nil {
			t.Fatalf("reference jcs.Transform(%s): %v", c.in, err)
		}
		if !bytes.Equal(got, ref) {
			t.Errorf("Canonicalize(%s) = %s, reference gives %s", c.in, got, ref)
		}
		again, err := protocol.Canonicalize(got)
		if err != nil || !bytes.Equal(again, got) {
			t.Errorf("Canonicalize is not idempotent on %s: %s, %v", got, again, err)
		}
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{"a":1,"a":2}`,           // duplicate member
		`{"a":{"b":1,"b":1}}`,     // duplicate, nested
		`{"a":"\ud800"}`,          // lone surrogate
		"{\"a\":\"\xff\"}",        // invalid UTF-8
		`{"a":1e400}`,             // overflows a double
		`{"a":-1e400}`,            // overflows a double
		`{"a":9007199254740993}`,  // integer not exact: rounds to 2^53
		`{"a":-9007199254740993}`, // integer not exact
		`{"a":12345678901234567890123}`,
		`{"a":01}`, // not JSON
		`{"a":1,}`, // not JSON
		`{"a" 1}`,  // not JSON
		`{"a":1}x`, // trailing data
		``,
	} {
		if _, err := protocol.Canonicalize([]byte(in)); protocol.CodeOf(err) != protocol.CodeMalformed {
			t.Errorf("Canonicalize(%q): got %v, want malformed", in, err)
		}
	}
}

// FuzzCanonical checks canonicalization against the reference library and for
// stability: canonicalize → decode → canonicalize gives the same bytes, and
// whatever both libraries accept they write identically.
func FuzzCanonical(f *testing.F) {
	for _, c := range canonicalCases {
		f.Add([]byte(c.in))
		f.Add([]byte(c.want))
	}
	f.Add([]byte(`{"a":"\u00e9","b":[{"c":1e-7}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := protocol.Canonicalize(in)
		ref, refErr := jcs.Transform(in)
		if err != nil {
			if protocol.CodeOf(err) != protocol.CodeMalformed {
				t.Fatalf("error without the malformed code: %v", err)
			}
			return
		}
		again, err := protocol.Canonicalize(got)
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("not stable: %q -> %q -> %q (%v)", in, got, again, err)
		}
		// The reference accepts some inputs we refuse (integers beyond 2^53),
		// and refuses some non-object documents; where it accepts, it agrees.
		if refErr == nil && !bytes.Equal(got, ref) {
			t.Fatalf("differs from reference on %q:\n got %q\n ref %q", in, got, ref)
		}
	})
}

func TestCanonicalizeLargeIntegers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in string
		ok bool
	}{
		{`9007199254740991`, true},
		{`9007199254740992`, true}, // 2^53: exact
		{`9007199254740993`, false},
		{`-9007199254740993`, false},
		{`18014398509481984`, true}, // 2^54: exact
		{`18014398509481985`, false},
		{`100000000000000000000`, true},
		{`123456789012345680000`, true}, // JCS's own output for 1.2345678901234568e20
		{`123456789012345678901`, false},
		{`1000000000000000000000`, true}, // 1e21
		{`1000000000000000000001`, false},
	} {
		_, err := protocol.Canonicalize([]byte(`[` + c.in + `]`))
		if (err == nil) != c.ok {
			t.Errorf("Canonicalize([%s]): got err=%v, want ok=%v", c.in, err, c.ok)
		}
	}
}
