package cli

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/protocol"
)

func marshalCanonical(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return protocol.Canonicalize(b)
}

func indent(b []byte) ([]byte, error) {
	v := jsontext.Value(b)
	err := v.Indent(jsontext.WithIndent("  "))
	return v, err
}
