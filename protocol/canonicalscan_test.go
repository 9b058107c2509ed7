package protocol

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func TestScanCanonical(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want bool
	}{
		{`{"a":1,"b":[true,false,null],"c":"x"}`, true},
		{`{"b":1,"a":2}`, false},          // order
		{`{"a":1,"a":2}`, false},          // duplicate
		{`{"a": 1}`, false},               // whitespace
		{`{"a":1.50}`, false},             // number form
		{`{"a":-0}`, false},               // negative zero
		{`{"a":1e21}`, false},             // exponent form
		{`{"a":1e+21}`, true},             // JCS exponent form
		{`{"a":"\/"}`, false},             // needless escape
		{`{"a":"\u0041"}`, false},         // needless escape
		{`{"a":"\u000a"}`, false},         // has a short form
		{`{"a":"\u001f\n\u0000"}`, true},  // JCS escapes
		{`{"a":"\u001F"}`, false},         // uppercase hex
		{`{"\u00e9":1}`, false},           // escaped name: left to the library
		{"{\"\u00e9\":1}", false},         // non-ASCII name: left to the library
		{`{"a":9007199254740993}`, false}, // not I-JSON: rounds to 2^53
		{`{"p":{"z":1},"sig":"s","tool":"t"}`, true},
	} {
		_, got := scanCanonical([]byte(c.in))
		if got != c.want {
			t.Errorf("scanCanonical(%s): got %v, want %v", c.in, got, c.want)
		}
	}
}

func TestScanCanonicalSpans(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, body, params, tool string }{
		{`{"params":{"a":[1]},"sig":"S","tool":"echo"}`, `{"params":{"a":[1]},"tool":"echo"}`, `{"a":[1]}`, `"echo"`},
		{`{"sig":"S","tool":"t"}`, `{"tool":"t"}`, ``, `"t"`},
		{`{"sig":"S"}`, `{}`, ``, ``},
		{`{"a":"sig","params":{"sig":"x"},"z":1}`, `{"a":"sig","params":{"sig":"x"},"z":1}`, `{"sig":"x"}`, ``},
		{`{"params":{},"sig":"S"}`, `{"params":{}}`, `{}`, ``},
	} {
		top, ok := scanCanonical([]byte(c.in))
		if !ok {
			t.Fatalf("scanCanonical(%s): not canonical", c.in)
		}
		so := withoutSig([]byte(c.in), top)
		if string(so.body) != c.body {
			t.Errorf("body of %s: got %s, want %s", c.in, so.body, c.body)
		}
		if got := spanText(so.body, so.params); got != c.params {
			t.Errorf("params of %s: got %q, want %q", c.in, got, c.params)
		}
		if got := spanText(so.body, so.tool); got != c.tool {
			t.Errorf("tool of %s: got %q, want %q", c.in, got, c.tool)
		}
		// The decoder-based path agrees.
		ref, err := topSpans([]byte(c.in))
		if err != nil || ref != top {
			t.Errorf("topSpans(%s): got %+v, %v; want %+v", c.in, ref, err, top)
		}
	}
}

func spanText(b []byte, s span) string {
	if s.start < 0 || s.end <= s.start {
		return ""
	}
	return string(b[s.start:s.end])
}

// FuzzScanCanonical checks the recognizer's one promise: when it says valid JSON
// is canonical, the library's canonical form is the same bytes; and its spans
// agree with the decoder-based cut.
func FuzzScanCanonical(f *testing.F) {
	f.Add([]byte(`{"params":{"a":[1,2.5,"x\n"]},"sig":"S","tool":"echo"}`))
	f.Add([]byte(`{"a":1e+21,"b":[{"c":null}],"d":"\u001f"}`))
	f.Add([]byte(`[1,2,{"a":true}]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		top, ok := scanCanonical(in)
		if !ok || !jsontext.Value(in).IsValid(jsontext.AllowDuplicateNames(true)) {
			return
		}
		c, err := Canonicalize(in)
		if err != nil {
			t.Fatalf("recognized as canonical but Canonicalize fails: %q: %v", in, err)
		}
		if !bytes.Equal(c, in) {
			t.Fatalf("recognized as canonical but is not:\n in %q\nJCS %q", in, c)
		}
		if jsontext.Value(in).Kind() != '{' {
			return
		}
		ref, err := topSpans(in)
		if err != nil {
			t.Fatalf("topSpans(%q): %v", in, err)
		}
		if ref != top {
			t.Fatalf("spans differ on %q: scanner %+v, decoder %+v", in, top, ref)
		}
	})
}
