package mcptier_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/nodeagent/mcptier"
	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/gvisor"
	"github.com/writhq/writ/sandbox/runc"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

// ociDriver is an mcp tier whose one inner tier is runc or gvisor, on the
// busybox root filesystem their own tests use (WRIT_TEST_ROOTFS).
func ociDriver(t *testing.T, tier string) *mcptier.Driver {
	t.Helper()
	var (
		inner sandbox.Driver
		err   error
	)
	switch tier {
	case sandbox.TierRunc:
		cfg := runc.DefaultConfig()
		cfg.RootFS, cfg.StateDir, cfg.Egress = sandboxtest.BusyboxRootfs(t), t.TempDir(), sandboxtest.EgressConfig(t)
		inner, err = runc.New(cfg)
	case sandbox.TierGvisor:
		cfg := gvisor.DefaultConfig()
		cfg.OCI.RootFS, cfg.OCI.StateDir, cfg.OCI.Egress = sandboxtest.BusyboxRootfs(t), t.TempDir(), sandboxtest.EgressConfig(t)
		inner, err = gvisor.New(cfg)
	default:
		t.Fatalf("no inner tier %s", tier)
	}
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, tier, inner.Available())
	cfg := mcptier.DefaultConfig()
	cfg.Inner[tier] = inner
	cfg.Egress = sandboxtest.EgressConfig(t)
	d, err := mcptier.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Available(); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestStdioUnderOCI runs the test server in a runc and in a gVisor
// container as the mcp tier's inner tier: a call answers with the tool's
// output, an error result is an error, an unknown tool fails, a server
// that lingers after its stdin ends is stopped, and a connection outside
// the allowlist is refused by the egress proxy, as under bwrap.
func TestStdioUnderOCI(t *testing.T) {
	t.Parallel()
	for _, tier := range []string{sandbox.TierRunc, sandbox.TierGvisor} {
		t.Run(tier, func(t *testing.T) {
			if tier == sandbox.TierGvisor {
				testtier.Slow(t, "a runsc sandbox per call")
			}
			d := ociDriver(t, tier)
			server := sandboxtest.BuildTool(t, serverPackage, runtime.GOOS, runtime.GOARCH)
			manifest := func(tool string, args ...string) sandbox.Manifest {
				return sandbox.Manifest{Name: "srv." + tool, Tier: sandbox.TierMCP, Command: &sandbox.Command{Path: server, Args: args},
					MCP:     &sandbox.MCP{Tool: tool, InnerTier: tier},
					Network: []sandbox.Destination{{Host: "api.test", Port: 443}}}
			}
			cases := []struct {
				name   string
				m      sandbox.Manifest
				params string
				status sandbox.Status
				exit   int
				output string
			}{
				{"echo", manifest("echo"), `{"text":"hi"}`, sandbox.StatusOK, 0, "echo: hi"},
				{"fail", manifest("fail"), `{}`, sandbox.StatusError, 1, "failed on purpose"},
				{"nosuch", manifest("nosuch"), `{}`, sandbox.StatusError, -1, ""},
				{"linger", manifest("echo", "-linger"), `{"text":"x"}`, sandbox.StatusOK, 0, "echo: x"},
				{"connect", manifest("connect"), `{"host":"evil.example","port":443}`, sandbox.StatusOK, 0, "HTTP/1.1 403"},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					out, err := d.Run(context.Background(), sandbox.Invocation{Manifest: c.m, Params: []byte(c.params), Workspace: t.TempDir()})
					if err != nil {
						t.Fatalf("Run: %v (%+v)", err, out)
					}
					if out.Status != c.status || out.ExitCode != c.exit {
						t.Fatalf("got status %s exit %d (%s, stderr %q), want %s exit %d", out.Status, out.ExitCode, out.Reason, out.Stderr, c.status, c.exit)
					}
					if !strings.HasPrefix(string(out.Output), c.output) {
						t.Errorf("got output %q, want it to begin with %q", out.Output, c.output)
					}
					if out.Tier != sandbox.TierMCP || out.MCP == nil || out.MCP.Tool != c.m.MCP.Tool || out.MCP.Server != digest(t, server) || out.MCP.InnerTier != tier {
						t.Errorf("got tier %q, mcp %+v, want mcp naming %s in %s and the server's digest", out.Tier, out.MCP, c.m.MCP.Tool, tier)
					}
					if c.name == "connect" {
						if out.Egress == nil || out.Egress.Refused != 1 || out.Egress.Allowed != 0 {
							t.Fatalf("got egress %+v, want one refused attempt", out.Egress)
						}
						if e := out.Egress.Entries[0]; e.Host != "evil.example" || e.Allowed || e.Reason != "not_allowed" {
							t.Errorf("got egress entry %+v, want evil.example refused as not_allowed", e)
						}
					}
				})
			}
		})
	}
}
