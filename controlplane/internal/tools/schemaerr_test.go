package tools

import (
	"strings"
	"testing"
)

// A schema failure says where and what failed, and never quotes a value of
// the params: the message goes into the receipt.
func TestSchemaFailureNamesPlaceNotValue(t *testing.T) {
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
		{`{"to":"acct-1","amount":5,"extra/key":1}`, []string{"at /: additional properties 'extra/key' not allowed"}},
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
