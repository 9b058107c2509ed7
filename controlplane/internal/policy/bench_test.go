package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	cedar "github.com/cedar-policy/cedar-go"
)

// benchPolicies is a set of 50 policies of the kinds docs/policy.md shows:
// tenant grants, per-tool limits on params, capability forbids, approval
// requirements and recipient forbids. A handful apply to the benchmark's
// intent; the rest are rejected by their scope or their first condition.
func benchPolicies() string {
	var b strings.Builder
	for i := range 20 {
		fmt.Fprintf(&b, "@id(\"tenant-%d.invoke\")\npermit (principal, action == Writ::Action::\"invoke\", resource)\n"+
			"when { principal.tenant == \"tenant-%d\" && resource.tenant == \"\" };\n\n", i, i)
	}
	for i := range 10 {
		fmt.Fprintf(&b, "@id(\"tool-%d.limit\")\nforbid (principal, action == Writ::Action::\"invoke\", resource == Writ::Tool::\"tool-%d\")\n"+
			"when { context.params.amount > %d };\n\n", i, i, 100*i)
	}
	for i := range 10 {
		fmt.Fprintf(&b, "@id(\"cap-%d\")\nforbid (principal, action, resource)\n"+
			"when { resource.capabilities.contains(\"cap-%d\") && principal.tenant != \"ops\" };\n\n", i, i)
	}
	for i := range 5 {
		fmt.Fprintf(&b, "@id(\"approval-%d\") @approval(\"required\")\npermit (principal, action == Writ::Action::\"invoke\", resource == Writ::Tool::\"tool-%d\");\n\n", i, i)
	}
	for i := range 5 {
		fmt.Fprintf(&b, "@id(\"mail-%d\")\nforbid (principal, action, resource == Writ::Tool::\"send_mail\")\n"+
			"when { context.params has to && context.params.to.contains(\"blocked-%d@example.com\") };\n\n", i, i)
	}
	return b.String()
}

// benchParams is a JSON object of about 1 KiB: recipients, a body, an amount
// and a nested record.
func benchParams() string {
	var to []string
	for i := range 8 {
		to = append(to, fmt.Sprintf(`"user-%d@example.com"`, i))
	}
	body := strings.Repeat("Quarterly figures attached. ", 25)
	return fmt.Sprintf(`{"to":[%s],"subject":"Q3 report","body":%q,"amount":12,"fee":0.25,`+
		`"meta":{"priority":"high","tags":["finance","q3","report"],"thread":{"id":"t-1","depth":2}}}`,
		strings.Join(to, ","), body)
}

// BenchmarkInvoke authorizes an intent with 1 KiB params against 50 policies:
// building the request from the intent (JSON → Cedar) and deciding, beside
// cedar-go's Authorize alone on the same policies with entities and request
// built beforehand. x-cedar is the ratio of the two, measured interleaved.
func BenchmarkInvoke(b *testing.B) {
	text := benchPolicies()
	s := mustParse(b, text)
	params := benchParams()
	tool := Tool{Name: "send_mail", Capabilities: []string{"network", "mail"}, Sandbox: "process"}
	in := intent(params, tenant("tenant-7"), onTool("send_mail"), withContext(`{"channel":"slack","device":"laptop"}`))
	if n := len(s.IDs()); n != 50 {
		b.Fatalf("got %d policies, want 50", n)
	}
	if len(params) < 1000 || len(params) > 1100 {
		b.Fatalf("got %d bytes of params, want about 1 KiB", len(params))
	}
	req, err := NewInvokeRequest(in, tool)
	if err != nil {
		b.Fatal(err)
	}
	if d := s.Invoke(req); !d.Allow || len(d.Policies) != 1 {
		b.Fatalf("got %+v, want allowed by tenant-7.invoke alone", d)
	}

	ps, err := cedar.NewPolicySetFromBytes("", []byte(text))
	if err != nil {
		b.Fatal(err)
	}
	// The same entities and request, built once: Cedar's work alone.
	es, creq := req.req.entities.Clone(), req.req.cedar
	baseline := func() {
		if ok, _ := cedar.Authorize(ps, es, creq); !ok {
			b.Fatal("baseline denied")
		}
	}
	b.Run("baseline=cedar", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			baseline()
		}
	})
	b.Run("invoke=prebuilt", func(b *testing.B) {
		interleaved(b, baseline, func() {
			if !s.Invoke(req).Allow {
				b.Fatal("denied")
			}
		})
	})
	b.Run("invoke=from-intent", func(b *testing.B) {
		b.SetBytes(int64(len(params)))
		interleaved(b, baseline, func() {
			req, err := NewInvokeRequest(in, tool)
			if err != nil {
				b.Fatal(err)
			}
			if !s.Invoke(req).Allow {
				b.Fatal("denied")
			}
		})
	})
}

// interleaved times op b.N times, and baseline as many times in alternating
// batches with the benchmark timer stopped; x-cedar is the median over the
// batches of op's time over baseline's. Alternating batches see the same
// load, and the median drops the batches a GC cycle or a neighbour's burst
// landed in, so the ratio holds on a busy, shared machine where ns/op does
// not. ns/op and allocs/op are op's alone.
func interleaved(b *testing.B, baseline, op func()) {
	const batch = 64
	var ratios []float64
	b.ReportAllocs()
	for done := 0; done < b.N; done += batch {
		n := min(batch, b.N-done)
		t0 := time.Now()
		for range n {
			op()
		}
		t1 := time.Now()
		b.StopTimer()
		for range n {
			baseline()
		}
		ratios = append(ratios, float64(t1.Sub(t0))/float64(time.Since(t1)))
		b.StartTimer()
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "x-cedar")
}
