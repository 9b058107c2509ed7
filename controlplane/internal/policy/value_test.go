package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
)

func convert(raw string) (cedar.Record, error) {
	var c converter
	return c.object([]byte(raw))
}

func dec(s string) cedar.Value {
	d, err := types.ParseDecimal(s)
	if err != nil {
		panic(err)
	}
	return d
}

func TestConvert(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		json string
		want cedar.Value // the value of member "v"; nil when v must be absent
	}{
		{`"x"`, cedar.String("x")},
		{`"\u00e9\n"`, cedar.String("é\n")},
		{`true`, cedar.True},
		{`false`, cedar.False},
		{`null`, nil},
		{`42`, cedar.Long(42)},
		{`-7`, cedar.Long(-7)},
		{`-0`, cedar.Long(0)},
		{`1e3`, cedar.Long(1000)},
		{`1000.000`, cedar.Long(1000)},
		{`-9223372036854775808`, cedar.Long(-1 << 63)},
		{`9223372036854775807`, cedar.String("9223372036854776000")}, // rounds to 2^63: past Long
		{`1e300`, cedar.String("1e+300")},
		{`1.5`, dec("1.5")},
		{`-1.5`, dec("-1.5")},
		{`0.1`, dec("0.1")},
		{`0.0001`, dec("0.0001")},
		{`-0.0001`, dec("-0.0001")},
		{`12.3400`, dec("12.34")},
		{`922337203685477.5`, dec("922337203685477.5")},
		{`999999999999999.5`, cedar.String("999999999999999.5")}, // past decimal's range
		{`0.00001`, cedar.String("0.00001")},
		{`1.23456`, cedar.String("1.23456")},
		{`1e-7`, cedar.String("1e-7")},
		{`{}`, cedar.Record{}},
		{`{"a": {"b": [1, "x", null]}}`, cedar.NewRecord(cedar.RecordMap{"a": cedar.NewRecord(cedar.RecordMap{
			"b": cedar.NewSet(cedar.Long(1), cedar.String("x"))})})},
		{`{"a": null, "b": 1}`, cedar.NewRecord(cedar.RecordMap{"b": cedar.Long(1)})},
		{`[]`, cedar.NewSet()},
		{`[3, 1, 3, 2]`, cedar.NewSet(cedar.Long(1), cedar.Long(2), cedar.Long(3))},
		{`[null]`, cedar.NewSet()},
		{`[[1], [1], [1.0]]`, cedar.NewSet(cedar.NewSet(cedar.Long(1)))},
		{`[1, "1", true]`, cedar.NewSet(cedar.Long(1), cedar.String("1"), cedar.True)},
	} {
		t.Run(tc.json, func(t *testing.T) {
			r, err := convert(`{"v": ` + tc.json + `}`)
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			got, ok := r.Get("v")
			switch {
			case tc.want == nil && ok:
				t.Errorf("got %v, want v absent", got)
			case tc.want != nil && (!ok || !got.Equal(tc.want)):
				t.Errorf("got %v (present %v), want %v", got, ok, tc.want)
			}
		})
	}
}

// TestConvertIgnoresSpelling: the mapping depends on values only, so any
// spelling of one canonical intent gets the same record.
func TestConvertIgnoresSpelling(t *testing.T) {
	t.Parallel()
	a, err := convert(`{"n":1000,"m":{"x":0.5,"y":[1,2]},"s":"é"}`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := convert("{ \"s\" : \"\\u00e9\" ,\n\"m\":{\"y\":[2,1,2],\"x\":5e-1}, \"n\":1e3 }")
	if err != nil {
		t.Fatal(err)
	}
	if !a.Equal(b) {
		t.Errorf("got %v and %v, want equal records", a, b)
	}
}

func TestConvertLimits(t *testing.T) {
	t.Parallel()
	wide := `{"a":[` + strings.Repeat(`"x",`, MaxValues-3) + `"x"]}` // object, array, MaxValues-2 strings
	for _, tc := range []struct {
		name string
		json string
		want error
	}{
		{"depth at the limit", nest(MaxDepth), nil},
		{"depth past the limit", nest(MaxDepth + 1), ErrTooDeep},
		{"arrays past the limit", `{"a":` + strings.Repeat(`[`, MaxDepth) + strings.Repeat(`]`, MaxDepth) + `}`, ErrTooDeep},
		{"absurd nesting", nest(100000), ErrTooDeep},
		{"values at the limit", wide, nil},
		{"values past the limit", strings.Replace(wide, `[`, `["x",`, 1), ErrTooManyValues},
		{"a big string is one value", `{"a":"` + strings.Repeat("x", 4<<20) + `"}`, nil},
		{"not an object", `[]`, ErrNotObject},
		{"empty", ``, ErrJSON},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", ErrJSON},
		{"duplicate names", `{"a":1,"a":1}`, ErrJSON},
		{"trailing data", `{}x`, ErrJSON},
		{"truncated", `{"a":[1,`, ErrJSON},
		{"number past double range", `{"a":1e400}`, ErrNumber},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := convert(tc.json); !errors.Is(err, tc.want) {
				t.Errorf("got error %v, want %v", err, tc.want)
			}
		})
	}
}

// nest is n objects, one inside the other.
func nest(n int) string {
	return strings.Repeat(`{"a":`, n-1) + `{}` + strings.Repeat(`}`, n-1)
}

// TestConvertCollidingSet bounds the worst case MaxValues exists for:
// cedar-go stores a set in a map keyed by a hash that is the value itself for a
// Long and the sum of the elements' hashes for a set, probing linearly on a
// collision, so [0, 1, …, n-1, [0], [1], …, [n-1]] costs time quadratic in n.
// At MaxValues it must stay well under a second on a slow, shared machine:
// what is measured is the CPU time of the thread that converts, which the
// load of other tests (CI runs every package at once under -race on 2
// cores) does not add to, as it does to the time on the clock.
func TestConvertCollidingSet(t *testing.T) {
	t.Parallel()
	n := (MaxValues - 3) / 3
	var b strings.Builder
	b.WriteString(`{"a":[`)
	for i := range n {
		fmt.Fprintf(&b, "%d,", i)
	}
	for i := range n {
		fmt.Fprintf(&b, "[%d],", i)
	}
	b.WriteString(`0]}`)
	start := time.Now()
	var err error
	took := cpuTime(func() { _, err = convert(b.String()) })
	if err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	t.Logf("%d colliding elements: %v of CPU (%v on the clock)", 2*n, took, time.Since(start))
	if took > 2*time.Second {
		t.Errorf("got %v of CPU for %d colliding elements, want under 2s: lower MaxValues", took, 2*n)
	}
}
