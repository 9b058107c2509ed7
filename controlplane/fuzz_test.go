package controlplane

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/protocol"
)

// TestErrorPlaces: a policy error is logged with its policy and position,
// never with Cedar's message, which quotes values (params).
func TestErrorPlaces(t *testing.T) {
	t.Parallel()
	got := errorPlaces([]string{
		`policy "p1" at line 3, column 5: integer overflow while attempting to add ` + "`9223372036854775807` with `1`",
		`policy "p2" at line 1, column 1`,
		`something else: with a secret`,
	})
	want := []string{`policy "p1" at line 3, column 5`, `policy "p2" at line 1, column 1`, "(a policy error)"}
	if !slices.Equal(got, want) {
		t.Fatalf("errorPlaces = %q, want %q", got, want)
	}
}

// FuzzErrorPlaces: whatever a policy's id and Cedar's message are, the
// logged place is a prefix of the error that ends before the message.
func FuzzErrorPlaces(f *testing.F) {
	f.Add("p1", 3, 5, "integer overflow while attempting to add `1` with `2`")
	f.Add("a, column 1: b", 1, 1, "secret")
	f.Add("", 0, 0, "")
	f.Fuzz(func(t *testing.T, id string, line, col int, msg string) {
		e := fmt.Sprintf("policy %q at line %d, column %d: %s", id, line, col, msg)
		got := errorPlaces([]string{e})
		if len(got) != 1 || !strings.HasPrefix(e, got[0]) || len(got[0]) > len(e)-len(": "+msg) {
			t.Fatalf("errorPlaces(%q) = %q", e, got)
		}
	})
}

// FuzzIntentListQuery: GET /v1/intents' query parser never panics, and what
// it accepts is within its bounds; a cursor it accepts reads back the same
// after it is written again.
func FuzzIntentListQuery(f *testing.F) {
	for _, s := range []string{"", "limit=5", "run=r&principal=p&tool=echo&state=completed&since=2026-01-02T03:04:05Z",
		"cursor=" + encodeIntentCursor(&fsm.IntentCursor{At: time.Unix(1, 2), ID: "int-1"}), "limit=501", "cursor=%%", "a=b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		filter, aerr := parseIntentQuery(q)
		if aerr != nil {
			if aerr.code != protocol.CodeMalformed {
				t.Fatalf("%q: code %s", raw, aerr.code)
			}
			return
		}
		if filter.Limit < 1 || filter.Limit > intentListMax || (filter.State != "" && !intentStates[filter.State]) {
			t.Fatalf("%q accepted as %+v", raw, filter)
		}
		for _, v := range []string{filter.Tenant, filter.Run, filter.Principal, filter.Tool} {
			if len(v) > intentListValueMax {
				t.Fatalf("%q: a value of %d bytes", raw, len(v))
			}
		}
		if c := filter.After; c != nil {
			again, ok := decodeIntentCursor(encodeIntentCursor(c))
			if !ok || !again.At.Equal(c.At) || again.ID != c.ID {
				t.Fatalf("%q: cursor %+v reads back as %+v", raw, c, again)
			}
		}
	})
}

// FuzzPolicyCases: any cases file either is refused or parses into cases
// that name described tools and expect a known decision, and deciding them
// with any policy text never panics.
func FuzzPolicyCases(f *testing.F) {
	f.Add([]byte(`{"tools":{"echo":{"sandbox":"wasm"}},"cases":[{"name":"a","tenant":"t","principal":"p","tool":"echo","params":{"x":[1,{"y":null}]},"context":{"channel":"c"},"expect":"allow"}]}`),
		[]byte(`@id("a") permit (principal, action, resource) when { context.params.x.contains(1) };`))
	f.Add([]byte(`{"tools":{"t":{"requires_approval":true}},"cases":[{"name":"n","tenant":"t","principal":"p","tool":"t","params":[],"expect":"approval"}]}`), []byte(``))
	f.Fuzz(func(t *testing.T, cases, text []byte) {
		c, err := ParsePolicyCases(cases)
		if err != nil {
			return
		}
		for _, k := range c.Cases {
			if _, ok := c.Tools[k.Tool]; !ok || k.Name == "" || !validExpect(k.Expect) {
				t.Fatalf("accepted case %+v", k)
			}
		}
		res, err := TestPolicy(text, c)
		if err == nil && len(res) != len(c.Cases) {
			t.Fatalf("%d results for %d cases", len(res), len(c.Cases))
		}
	})
}

// FuzzToolsQuery: GET /v1/tools' query parser never panics, refuses with
// malformed only, accepts only the known formats, and the function names
// made for any tool names are valid and distinct.
func FuzzToolsQuery(f *testing.F) {
	for _, s := range []string{"", "format=openai", "format=anthropic", "format=", "format=a&format=b", "x=1", "%zz"} {
		f.Add(s, "srv.read_file", "srv__read_file")
	}
	f.Fuzz(func(t *testing.T, raw, name1, name2 string) {
		format, aerr := parseToolsQuery(raw)
		if aerr != nil {
			if aerr.code != protocol.CodeMalformed {
				t.Fatalf("%q: code %s", raw, aerr.code)
			}
			return
		}
		if format != "" && format != formatOpenAI && format != formatAnthropic {
			t.Fatalf("%q accepted as format %q", raw, format)
		}
		if len(name1) > 64 || len(name2) > 64 || name1 == name2 {
			return
		}
		c := functionTools(formatOpenAI, []protocol.ToolView{{Name: name1, InputSchema: []byte(`{}`)}, {Name: name2, InputSchema: []byte(`{}`)}})
		if len(c.Names) != 2 {
			t.Fatalf("%q and %q share a function name: %v", name1, name2, c.Names)
		}
		for fn := range c.Names {
			if len(fn) > 64 {
				t.Fatalf("function name %q longer than 64", fn)
			}
		}
	})
}

// FuzzLockRequest: the body of POST /v1/admin/locks never panics the
// parser, is refused only as malformed, and what it accepts names something
// to lock, with ids, a reason of plain text and a TTL within a year.
func FuzzLockRequest(f *testing.F) {
	for _, s := range []string{`{"tenant":"acme","reason":"runaway"}`, `{"node":"n1","ttl_seconds":3600,"reason":"r"}`,
		`{"principal":"bot","tool":"echo","reason":"x"}`, `{"reason":"nothing"}`, `{"tenant":"a b","reason":"r"}`,
		`{"tool":"t","reason":"r","ttl_seconds":-1}`, `{"tool":"t","reason":"r"}{}`, `{"x":1}`, ``} {
		f.Add([]byte(s))
	}
	for _, s := range []string{`{"tool":"echo","reason":"r"} garbage`, `{"tool":"echo","reason":"r"},`, `{"tool":"echo","reason":"r"}{}`} {
		if _, aerr := parseLockRequest([]byte(s)); aerr == nil {
			f.Fatalf("%q: data after the object accepted", s)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		q, aerr := parseLockRequest(body)
		if aerr != nil {
			if aerr.code != protocol.CodeMalformed {
				t.Fatalf("%q: code %s", body, aerr.code)
			}
			return
		}
		if q.Tenant == "" && q.Principal == "" && q.Tool == "" && q.Node == "" {
			t.Fatalf("%q: accepted a lock of nothing", body)
		}
		for _, v := range []string{q.Tenant, q.Tool, q.Node} {
			if v != "" && !validID(v) {
				t.Fatalf("%q: accepted %q", body, v)
			}
		}
		if !plainText(q.Reason, 512) || (q.Principal != "" && !plainText(q.Principal, 256)) ||
			q.TTLSeconds < 0 || time.Duration(q.TTLSeconds)*time.Second > MaxLockTTL {
			t.Fatalf("%q accepted as %+v", body, q)
		}
	})
}
