package tools

import (
	"bytes"
	// jsonschema validates numbers as encoding/json's json.Number: the only use.
	"encoding/json"
	"errors"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// instance decodes params into the values jsonschema validates —
// map[string]any, []any, json.Number, string, bool and nil — as
// jsonschema.UnmarshalJSON does, in half its time: params are decoded
// on every admission. A repeated member name keeps the last value, as there.
func instance(params []byte) (any, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(params), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	v, err := instanceValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("params: data after the top-level value")
	}
	return v, nil
}

func instanceValue(dec *jsontext.Decoder) (any, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case 'n':
		return nil, nil
	case 't', 'f':
		return tok.Bool(), nil
	case '"':
		return tok.String(), nil
	case '0':
		return json.Number(tok.String()), nil
	case '{':
		m := map[string]any{}
		for dec.PeekKind() != '}' {
			name, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			k := name.String()
			v, err := instanceValue(dec)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		_, err := dec.ReadToken()
		return m, err
	case '[':
		a := []any{}
		for dec.PeekKind() != ']' {
			v, err := instanceValue(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.ReadToken()
		return a, err
	}
	return nil, errors.New("params: unexpected token")
}
