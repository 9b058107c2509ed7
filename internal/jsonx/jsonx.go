// Package jsonx holds the project's options for github.com/go-json-experiment/json,
// the one JSON library it uses: the encoding that keeps signed, hashed and stored
// bytes as they have always been, and the two ways of reading (strict for what
// arrives on the wire, lenient for what the project wrote itself).
package jsonx

import (
	"io"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// Stable makes json.Marshal write the bytes the project has always written
// (it started on encoding/json): nil slices and maps as null, map members
// sorted, <, >, &, U+2028 and U+2029 escaped, omitempty meaning what it
// meant to encoding/json (false and 0 omitted too), durations as
// nanoseconds, byte arrays as arrays of numbers, invalid UTF-8 replaced and
// raw values kept as written (repeated member names, escapes), rather than
// refused or rewritten.
// Everything signed, hashed, stored in Raft, bbolt or a snapshot, or already
// on the wire is encoded with it.
var Stable = json.JoinOptions(
	json.FormatNilSliceAsNull(true),
	json.FormatNilMapAsNull(true),
	json.Deterministic(true),
	jsontext.EscapeForHTML(true),
	jsontext.EscapeForJS(true),
	jsontext.AllowInvalidUTF8(true),
	jsontext.AllowDuplicateNames(true),
	jsontext.PreserveRawStrings(true),
	jsonv1.OmitEmptyWithLegacySemantics(true),
	jsonv1.FormatDurationAsNano(true),
	jsonv1.FormatByteArrayAsArray(true),
)

// Lenient reads what the project wrote itself in the past (Raft log entries,
// snapshots, bbolt records, files on disk): member names matched without
// regard to case (but not to '_' and '-', which v2's folding also ignores
// and encoding/json did not), duplicate names and invalid UTF-8 accepted,
// durations as nanoseconds, as encoding/json read them. Old stored records
// keep loading.
var Lenient = json.JoinOptions(
	json.MatchCaseInsensitiveNames(true),
	jsonv1.MatchCaseSensitiveDelimiter(true),
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
	jsonv1.FormatDurationAsNano(true),
	jsonv1.FormatByteArrayAsArray(true),
)

// Strict reads a document whose schema refuses unknown members: names are
// matched exactly, duplicates and invalid UTF-8 are refused (the library's
// defaults), and a member the Go type does not define is an error.
var Strict = json.JoinOptions(
	json.RejectUnknownMembers(true),
	jsonv1.FormatDurationAsNano(true),
)

// Marshal encodes v with [Stable].
func Marshal(v any) ([]byte, error) {
	return json.Marshal(v, Stable)
}

// MarshalIndent encodes v with [Stable], each element on its own line
// beginning with prefix and indented by indent.
func MarshalIndent(v any, prefix, indent string) ([]byte, error) {
	return json.Marshal(v, Stable, jsontext.WithIndentPrefix(prefix), jsontext.WithIndent(indent))
}

// Encode writes v to w with [Stable], followed by a newline, as one value of
// a stream.
func Encode(w io.Writer, v any) error {
	return json.MarshalEncode(jsontext.NewEncoder(w, Stable), v)
}

// UnmarshalLenient decodes data that the project itself wrote, with [Lenient].
func UnmarshalLenient(data []byte, v any) error {
	return json.Unmarshal(data, v, Lenient)
}

// UnmarshalStrict decodes data from the wire with [Strict].
func UnmarshalStrict(data []byte, v any) error {
	return json.Unmarshal(data, v, Strict)
}
