package protocol_test

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/protocol"
)

// checkIntentParams: for whatever DecodeIntent takes, IntentParams gives the
// same params; what it refuses, it refuses as malformed.
func checkIntentParams(t *testing.T, raw []byte) {
	t.Helper()
	got, err := protocol.IntentParams(raw)
	if err != nil && protocol.CodeOf(err) != protocol.CodeMalformed {
		t.Fatalf("IntentParams: %v, want malformed", err)
	}
	in, derr := protocol.DecodeIntent(raw, 0)
	if derr != nil {
		return
	}
	if err != nil || !bytes.Equal(got, in.Params) {
		t.Fatalf("IntentParams: %s (%v), DecodeIntent's params: %s", got, err, in.Params)
	}
}

func TestIntentParams(t *testing.T) {
	for _, params := range []string{`{}`, `{"msg":"hi"}`, `{"b":[1,2.5e3],"a":{"params":"inner"}}`, `{"naïve":{"ключ":"\n"}}`} {
		raw := signedIntent(t, newIntent(func(in *protocol.Intent) { in.Params = jsontext.Value(params) }))
		canon, err := protocol.Canonicalize(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, form := range [][]byte{raw, canon} {
			checkIntentParams(t, form)
			if _, err := protocol.IntentParams(form); err != nil {
				t.Fatalf("params %s: %v", params, err)
			}
		}
	}
	for _, bad := range []string{``, `[]`, `{"a":1}`, `{"params":1`, `"params"`} {
		if _, err := protocol.IntentParams([]byte(bad)); protocol.CodeOf(err) != protocol.CodeMalformed {
			t.Errorf("%q: got %v, want malformed", bad, err)
		}
	}
}

// FuzzIntentParams: IntentParams agrees with DecodeIntent on every intent
// that decodes, and refuses only as malformed.
func FuzzIntentParams(f *testing.F) {
	intentSeeds(f)
	f.Add([]byte(`{"params":{"naïve":1},"tool":"echo"}`))
	f.Fuzz(func(t *testing.T, raw []byte) { checkIntentParams(t, raw) })
}
