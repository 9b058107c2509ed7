package tools

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A schema failure says where and what failed, and never quotes a value of
// the params: the message goes into the receipt.
func TestSchemaFailureNamesPlaceNotValue(t *testing.T) {
	t.Parallel()
	spec := `{"name":"pay","input_schema":{"type":"object","required":["to","amount"],"additionalProperties":false,"properties":{` +
		`"to":{"type":"string","pattern":"^acct-[0-9]+$","maxLength":12},"amount":{"type":"number","minimum":1,"maximum":100},` +
		`"memo":{"enum":["rent","food"]},"tags":{"type":"array","items":{"type":"string"}}}},"manifest":{"tier":"wasm","name":"pay","module":"/x.wasm"}}`
	tool, err := Parse([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		params string
		want   []string
	}{
		{`{"to":"SECRET-IBAN-9999"}`, []string{"at /: missing property 'amount'", "at /to: pattern not satisfied", "at /to: maxLength not satisfied"}},
		{`{"to":"acct-1","amount":123456789}`, []string{"at /amount: maximum not satisfied"}},
		{`{"to":"acct-1","amount":5,"memo":"SECRET-memo"}`, []string{"at /memo: enum not satisfied"}},
		{`{"to":"acct-1","amount":5,"tags":["ok",7]}`, []string{"at /tags/1: got number, want string"}},
		{`{"to":"acct-1","amount":"SECRET-amount"}`, []string{"at /amount: got string, want number"}},
		{`{"to":"acct-1","amount":5,"SECRET-key":1,"SECRET-2":2}`, []string{"at /: 2 properties the schema does not allow"}},
	} {
		err := tool.Validate([]byte(c.params))
		if err == nil {
			t.Fatalf("%s: valid", c.params)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "params do not fit the tool's input schema: ") || strings.Contains(msg, "SECRET") ||
			strings.Contains(msg, "123456789") || strings.ContainsAny(msg, "\n") {
			t.Errorf("%s: %q", c.params, msg)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q lacks %q", c.params, msg, w)
			}
		}
	}
}

func TestSchemaFailureIsBounded(t *testing.T) {
	t.Parallel()
	spec := `{"name":"many","input_schema":{"type":"array","items":{"type":"string"}},"manifest":{"tier":"wasm","name":"many","module":"/x.wasm"}}`
	tool, err := Parse([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	err = tool.Validate([]byte(`[1,2,3,4,5,6,7,8,9,10,11,12]`))
	if err == nil || !strings.HasSuffix(err.Error(), "; and 7 more") || len(err.Error()) > maxSchemaMessage {
		t.Fatalf("%v", err)
	}
}

// A message cut to its bound stays UTF-8, whatever the property names.
func TestSchemaFailureStaysUTF8(t *testing.T) {
	t.Parallel()
	spec := `{"name":"strict","input_schema":{"type":"object","additionalProperties":false},"manifest":{"tier":"wasm","name":"strict","module":"/x.wasm"}}`
	tool, err := Parse([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{strings.Repeat("€", 300), strings.Repeat("a", 509) + "€€", strings.Repeat("é", 1000)} {
		params := `{"` + key + `":1,"` + key + `x":{"` + key + `":2}}`
		err := tool.Validate([]byte(params))
		if err == nil || !utf8.ValidString(err.Error()) || len(err.Error()) > maxSchemaMessage {
			t.Fatalf("%d-byte key: %d bytes, valid UTF-8 %v", len(key), len(err.Error()), utf8.ValidString(err.Error()))
		}
	}
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{{"abcdef", 6, "abcdef"}, {"abcdefg", 6, "abc..."}, {"ab€€", 7, "ab..."}, {"€€€", 7, "€..."}} {
		if got := truncate(c.s, c.n); got != c.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
