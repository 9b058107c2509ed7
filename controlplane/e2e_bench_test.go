package controlplane_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/controlplane/localcluster"
)

// BenchmarkEndToEnd measures, on loopback, the latency from submitting an
// echo intent to its result being recorded (POST /v1/intents?wait=, through
// admission, Raft, scheduling, a signed dispatch pushed over QUIC, the node's
// verification, its signed result, and the result's Raft entry and receipt),
// beside a raw QUIC round trip of a frame of the same size in the same run.
// The node answers at once, so the figure excludes the sandbox's own start
// (measured by `writ bench sandbox`). Reported: p50 and p99 of each, in µs.
func BenchmarkEndToEnd(b *testing.B) {
	params := `{"msg":"` + strings.Repeat("x", 500) + `"}`
	rtt, err := localcluster.QUICRoundTrips(context.Background(), 500, len(params)+400)
	if err != nil {
		b.Fatal(err)
	}
	d := startDevWith(b, func(c *controlplane.Config) { c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil)) })
	d.c.NoProofWait = true // the recorded result, not the next checkpoint
	ctx := context.Background()
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		raw := d.intent(b, "echo", params)
		start := time.Now()
		r, err := d.c.Submit(ctx, raw, nil, 10*time.Second)
		lat = append(lat, time.Since(start))
		if err != nil || r.State != "completed" {
			b.Fatalf("intent %d: %+v %v", i, r, err)
		}
	}
	b.StopTimer()
	report(b, "rtt", rtt)
	report(b, "e2e", lat)
}

func report(b *testing.B, name string, d []time.Duration) {
	slices.Sort(d)
	p := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))].Microseconds()) }
	b.ReportMetric(p(0.50), name+"-p50-µs")
	b.ReportMetric(p(0.99), name+"-p99-µs")
}
