package mcptier_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

// BenchmarkStdioCall: one call of the test server's echo tool through the
// mcp tier under bwrap, next to the echo tool (stdin to stdout) run
// directly in the bwrap tier, alternately in the same run. Reports both
// medians, their ratio and the difference: what the MCP session (the
// server's start-up, initialize, tools/call, its end) costs over a plain
// tool.
func BenchmarkStdioCall(b *testing.B) {
	d := newDriverTB(b)
	server := sandboxtest.BuildTool(b, serverPackage, runtime.GOOS, runtime.GOARCH)
	echo := sandboxtest.BuildTool(b, "github.com/writhq/writ/sandbox/tools/echo", runtime.GOOS, runtime.GOARCH)
	ws := b.TempDir()
	mcpM := sandbox.Manifest{Name: "srv.echo", Tier: sandbox.TierMCP, Command: &sandbox.Command{Path: server},
		MCP: &sandbox.MCP{Tool: "echo", InnerTier: sandbox.TierBwrap}}
	plain := mcpM.Inner()
	plain.Command = &sandbox.Command{Path: echo}
	inner := innerBwrap(b)
	run := func(dr sandbox.Driver, m sandbox.Manifest) func() error {
		return func() error {
			out, err := dr.Run(context.Background(), sandbox.Invocation{Manifest: m, Params: []byte(`{"text":"x"}`), Workspace: ws})
			if err == nil && out.Status != sandbox.StatusOK {
				err = fmt.Errorf("status %s: %s %s", out.Status, out.Reason, out.Stderr)
			}
			return err
		}
	}
	raw, tier := run(inner, plain), run(d, mcpM)
	for range 3 {
		if err := raw(); err != nil {
			b.Fatal(err)
		}
		if err := tier(); err != nil {
			b.Fatal(err)
		}
	}
	var rs, ts []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := raw(); err != nil {
			b.Fatal(err)
		}
		rs = append(rs, time.Since(start))
		start = time.Now()
		if err := tier(); err != nil {
			b.Fatal(err)
		}
		ts = append(ts, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(rs)
	slices.Sort(ts)
	r, t := rs[len(rs)/2], ts[len(ts)/2]
	b.ReportMetric(float64(t.Microseconds()), "p50-us")
	b.ReportMetric(float64(r.Microseconds()), "raw-p50-us")
	b.ReportMetric(float64(t)/float64(max(r, 1)), "ratio")
	b.ReportMetric(float64((t - r).Microseconds()), "over-us")
}
