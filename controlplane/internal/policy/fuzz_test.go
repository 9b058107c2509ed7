package policy

import (
	"errors"
	"slices"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// FuzzParse: Parse never panics; a set it accepts has unique, sorted, valid
// ids, and parsing its Text again gives the same set.
func FuzzParse(f *testing.F) {
	f.Add([]byte(DevPolicy))
	f.Add([]byte(approvers))
	f.Add([]byte(`@id("a") @approval("required") permit (principal in Writ::Group::"g", action in [Writ::Action::"invoke"], resource) when { context.params.a.b < 3 } unless { resource.capabilities.containsAny(["x"]) };`))
	f.Add([]byte(`@id("a") forbid (principal is Writ::Agent, action, resource is Writ::Tool in Writ::Tool::"t") when { ip("10.0.0.1").isLoopback() || decimal("1.5").lessThan(decimal("2.0")) || datetime("2024-01-01") < datetime("2025-01-01") };`))
	f.Add([]byte(`@id("x") permit (principal, action, resource`))
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := Parse(src)
		if err != nil {
			var pe *PolicyError
			if !errors.Is(err, ErrSyntax) && !errors.As(err, &pe) && !errors.Is(err, ErrTextTooLarge) && !errors.Is(err, ErrTooNested) {
				t.Fatalf("got unclassified error %v", err)
			}
			return
		}
		ids := s.IDs()
		if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
			t.Fatalf("got ids %q, want sorted and unique", ids)
		}
		for _, id := range ids {
			if !validID(id) {
				t.Fatalf("got invalid id %q", id)
			}
		}
		again, err := Parse([]byte(s.Text()))
		if err != nil {
			t.Fatalf("reparsing Text: got error %v", err)
		}
		if again.Hash() != s.Hash() || !slices.Equal(again.IDs(), ids) {
			t.Fatalf("reparsing Text: got %s, %q; want %s, %q", again.Hash(), again.IDs(), s.Hash(), ids)
		}
	})
}

// FuzzConvert: the JSON mapping never panics, leaves its input alone, gives
// equal values for the same input twice and for its RFC 8785 form, and a request built from it can be
// evaluated without a panic.
func FuzzConvert(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":[1,2.5,"x",null,{"c":true}],"d":1e300,"e":-0.0001}`))
	f.Add([]byte(`{"to":["x@example.com"],"amount":999.5,"n":{"m":{"o":[[],[[]]]}}}`))
	f.Add([]byte(`{"a":[0,1,[0],[1]],"\u0000":"\ud83d\ude00"}`))
	f.Add([]byte(`[1]`))
	set := mustParse(f, DevPolicy+approvers+`
		@id("params") permit (principal, action, resource) when { context.params.amount < 1000 || context.params.to.contains("x") };`)
	f.Fuzz(func(t *testing.T, raw []byte) {
		var c converter
		before := slices.Clone(raw)
		a, errA := c.object(raw)
		if !slices.Equal(raw, before) {
			t.Fatalf("conversion changed its input %q to %q", before, raw)
		}
		b, errB := convert(string(raw))
		if (errA == nil) != (errB == nil) || (errA == nil && !a.Equal(b)) {
			t.Fatalf("converting twice: got %v, %v and %v, %v; want the same", a, errA, b, errB)
		}
		if errA != nil {
			if !errors.Is(errA, ErrInput) {
				t.Fatalf("got error %v, want one wrapping ErrInput", errA)
			}
			return
		}
		canon := jsontext.Value(slices.Clone(raw))
		if err := canon.Canonicalize(); err == nil {
			c, err := convert(string(canon))
			if err != nil || !c.Equal(a) {
				t.Fatalf("canonical form %s: got %v, %v; want %v", canon, c, err, a)
			}
		}
		in := intent(string(raw), withContext(string(raw)))
		if req, err := NewInvokeRequest(in, echoTool()); err == nil {
			set.Invoke(req)
		}
		if req, err := NewApproveRequest(in, approval(in, "alice", "approve"), echoTool()); err == nil {
			set.Approve(req)
		}
	})
}
