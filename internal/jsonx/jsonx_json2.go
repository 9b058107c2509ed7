package jsonx

import (
	"io"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// DecodeLenient reads the next JSON value from r into v with [Lenient], as
// encoding/json's Decoder.Decode did: what follows that value is left unread.
func DecodeLenient(r io.Reader, v any) error {
	return json.UnmarshalDecode(jsontext.NewDecoder(r), v, Lenient)
}

// Valid reports whether data is one JSON value, as encoding/json's Valid did:
// duplicate names and invalid UTF-8 are not its concern.
func Valid(data []byte) bool {
	return jsontext.Value(data).IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
}
