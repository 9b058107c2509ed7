package tools

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

var instanceSeeds = []string{
	`{}`, `{"msg":"hi"}`, `{"a":[1,2.5,-3e10,{"b":null}],"c":true,"d":false,"e":"\u00e9\n"}`,
	`{"n":1.0,"m":100000000000000000000000000001,"o":-0.0}`, `[]`, `"s"`, `12`, `null`,
	`{"deep":[[[[[[{"x":[]}]]]]]]}`, `{"a":1} `, `{"a":1}x`, `{"a":`, `{"a":1,"a":2}`,
}

// TestInstanceAsJSONSchema: params decode to exactly what
// jsonschema.UnmarshalJSON gives, and what it refuses is refused.
func TestInstanceAsJSONSchema(t *testing.T) {
	t.Parallel()
	for _, s := range instanceSeeds {
		checkInstance(t, []byte(s))
	}
}

func checkInstance(t *testing.T, b []byte) {
	t.Helper()
	want, werr := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	got, gerr := instance(b)
	if !jsontext.Value(b).IsValid() {
		// Not what a verified intent can carry (invalid UTF-8, a
		// repeated name, bad syntax): it need only not be accepted
		// where jsonschema refuses it.
		if werr != nil && gerr == nil {
			t.Fatalf("%q: jsonschema refuses (%v), instance accepts", b, werr)
		}
		return
	}
	if werr != nil || gerr != nil {
		t.Fatalf("%q: jsonschema %v, instance %v", b, werr, gerr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\ngot  %#v\nwant %#v", b, got, want)
	}
}

func FuzzInstance(f *testing.F) {
	for _, s := range instanceSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkInstance(t, b) })
}
