package jsonx

import (
	"bytes"
	// The reference: Stable must write the bytes encoding/json writes.
	"encoding/json"
	"testing"
	"time"
)

type inner struct {
	N int `json:"n,omitempty"`
}

type sample struct {
	Name     string           `json:"name"`
	HTML     string           `json:"html"`
	Nil      []string         `json:"nil"`
	NilMap   map[string]int   `json:"nil_map"`
	Map      map[string]int   `json:"map"`
	Zero     int              `json:"zero,omitempty"`
	False    bool             `json:"false,omitempty"`
	Empty    string           `json:"empty,omitempty"`
	Ptr      *inner           `json:"ptr,omitempty"`
	Struct   inner            `json:"struct,omitempty"`
	Dur      time.Duration    `json:"dur"`
	Time     time.Time        `json:"time"`
	Bytes    []byte           `json:"bytes"`
	Array    [3]byte          `json:"array"`
	Raw      json.RawMessage  `json:"raw"`
	Any      any              `json:"any"`
	Nested   []map[string]any `json:"nested"`
	Untagged string
	inner
	Ints map[int]string `json:"ints"`
}

func samples() []any {
	full := sample{
		Name: "é", HTML: "<a href=\"x\">&\u2028\u2029</a>",
		Map:  map[string]int{"b": 2, "a": 1, "C": 3},
		Zero: 0, Dur: 1500 * time.Millisecond,
		Time:  time.Date(2026, 11, 22, 10, 0, 0, 5, time.UTC),
		Bytes: []byte{0, 1, 250}, Array: [3]byte{1, 2, 3},
		Raw:    json.RawMessage(`{ "x" : [1, 2] }`),
		Any:    map[string]any{"z": []any{1.5, "s", nil, true}, "a": map[string]any{}},
		Nested: []map[string]any{nil, {"k": []int(nil)}},
		Ints:   map[int]string{10: "ten", 2: "two"},
	}
	full.inner.N = 7
	dup := sample{Raw: json.RawMessage(`{"a":1,"a":2}`)}
	return []any{sample{}, full, dup, []any(nil), map[string]any(nil), "plain <&>", 12.5, nil}
}

// TestStableMatchesEncodingJSON: every shape the project encodes comes out
// byte for byte as encoding/json wrote it, compact, indented and streamed.
func TestStableMatchesEncodingJSON(t *testing.T) {
	for i, v := range samples() {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Marshal(v)
		if err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("sample %d Marshal:\n got %s\nwant %s", i, got, want)
		}
		want, _ = json.MarshalIndent(v, "", "  ")
		if got, err = MarshalIndent(v, "", "  "); err != nil || !bytes.Equal(got, want) {
			t.Errorf("sample %d MarshalIndent (%v):\n got %s\nwant %s", i, err, got, want)
		}
		var wb, gb bytes.Buffer
		_ = json.NewEncoder(&wb).Encode(v)
		if err := Encode(&gb, v); err != nil || !bytes.Equal(gb.Bytes(), wb.Bytes()) {
			t.Errorf("sample %d Encode (%v):\n got %q\nwant %q", i, err, gb.Bytes(), wb.Bytes())
		}
	}
}

// TestStableInvalidUTF8 pins the one difference from encoding/json: a string
// holding invalid UTF-8 is written with U+FFFD itself rather than the escape
// \ufffd. Both read back as the same string, and canonical JSON (RFC 8785)
// writes U+FFFD unescaped, so no hash or signature depends on the spelling.
func TestStableInvalidUTF8(t *testing.T) {
	v := map[string]string{"bad": "a\xffb"}
	want, _ := json.Marshal(v)
	got, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "{\"bad\":\"a\ufffdb\"}" || string(want) != `{"bad":"a\ufffdb"}` {
		t.Fatalf("got %s, encoding/json %s", got, want)
	}
	var a, b map[string]string
	if json.Unmarshal(got, &a) != nil || UnmarshalLenient(want, &b) != nil || a["bad"] != b["bad"] || a["bad"] != "a\ufffdb" {
		t.Errorf("read back %q and %q", a["bad"], b["bad"])
	}
}

// TestLenientReadsWhatEncodingJSONRead: stored documents with differently
// cased names, duplicate names or invalid UTF-8 load as they always did;
// Strict refuses each of them.
func TestLenientReadsWhatEncodingJSONRead(t *testing.T) {
	type rec struct {
		Name string        `json:"name"`
		Dur  time.Duration `json:"dur"`
	}
	for _, doc := range []string{
		`{"Name":"a","dur":5}`,
		`{"name":"x","name":"a","dur":5}`,
		"{\"name\":\"a\xff\",\"dur\":5}",
		`{"name":"a","dur":5,"extra":1}`,
	} {
		var want, got rec
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatalf("encoding/json refused %q: %v", doc, err)
		}
		if err := UnmarshalLenient([]byte(doc), &got); err != nil {
			t.Errorf("UnmarshalLenient(%q): %v", doc, err)
		} else if got != want {
			t.Errorf("UnmarshalLenient(%q) = %+v, want %+v", doc, got, want)
		}
		if err := UnmarshalStrict([]byte(doc), &got); err == nil {
			t.Errorf("UnmarshalStrict(%q) accepted it", doc)
		}
	}
	// What encoding/json did not fold: '_' and '-' in names.
	type id struct {
		DispatchID string `json:"dispatch_id"`
	}
	for _, doc := range []string{`{"dispatchid":"x"}`, `{"dispatch-id":"x"}`, `{"_dispatch__id_":"x"}`, `{"DispatchId":"x"}`} {
		var want, got id
		json.Unmarshal([]byte(doc), &want)
		if err := UnmarshalLenient([]byte(doc), &got); err != nil || got != want {
			t.Errorf("UnmarshalLenient(%q) = %+v, %v; encoding/json read %+v", doc, got, err, want)
		}
	}
	var ok rec
	if err := UnmarshalStrict([]byte(`{"name":"a","dur":5}`), &ok); err != nil || ok != (rec{"a", 5}) {
		t.Errorf("UnmarshalStrict of a good document = %+v, %v", ok, err)
	}
}
