package mcptier_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/nodeagent/mcptier"
	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/bwrap"
	"github.com/writhq/writ/sandbox/process"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

// ServerPackage is the test MCP server.
const serverPackage = "github.com/writhq/writ/nodeagent/mcptier/testdata/mcpserver"

func newDriver(t *testing.T) *mcptier.Driver { return newDriverTB(t) }

// innerBwrap is a bwrap driver with the test egress configuration.
func innerBwrap(t testing.TB) *bwrap.Driver {
	t.Helper()
	bcfg := bwrap.DefaultConfig()
	bcfg.Egress = sandboxtest.EgressConfig(t)
	b, err := bwrap.New(bcfg)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, "bwrap", b.Available())
	return b
}

func newDriverTB(t testing.TB) *mcptier.Driver {
	t.Helper()
	cfg := mcptier.DefaultConfig()
	cfg.Inner[sandbox.TierBwrap] = innerBwrap(t)
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

func digest(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// TestStdioUnderBwrap runs the test server under bwrap: a call's result
// content is the output, the outcome names the server's digest and the
// tool, an error result is an error, and an attempt to reach a
// destination outside the allowlist is refused by the egress proxy.
func TestStdioUnderBwrap(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	server := sandboxtest.BuildTool(t, serverPackage, runtime.GOOS, runtime.GOARCH)
	manifest := func(tool string) sandbox.Manifest {
		return sandbox.Manifest{Name: "srv." + tool, Tier: sandbox.TierMCP, Command: &sandbox.Command{Path: server},
			MCP:     &sandbox.MCP{Tool: tool, InnerTier: sandbox.TierBwrap},
			Network: []sandbox.Destination{{Host: "api.test", Port: 443}}}
	}
	cases := []struct {
		tool, params string
		status       sandbox.Status
		exit         int
		output       string
	}{
		{"echo", `{"text":"hi"}`, sandbox.StatusOK, 0, "echo: hi"},
		{"fail", `{}`, sandbox.StatusError, 1, "failed on purpose"},
		{"nosuch", `{}`, sandbox.StatusError, -1, ""},
		{"connect", `{"host":"evil.example","port":443}`, sandbox.StatusOK, 0, "HTTP/1.1 403"},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			out, err := d.Run(context.Background(), sandbox.Invocation{Manifest: manifest(c.tool), Params: []byte(c.params), Workspace: t.TempDir()})
			if err != nil {
				t.Fatalf("Run: %v (%+v)", err, out)
			}
			if out.Status != c.status || out.ExitCode != c.exit {
				t.Fatalf("got status %s exit %d (%s, stderr %q), want %s exit %d", out.Status, out.ExitCode, out.Reason, out.Stderr, c.status, c.exit)
			}
			if !strings.HasPrefix(string(out.Output), c.output) {
				t.Errorf("got output %q, want it to begin with %q", out.Output, c.output)
			}
			if out.Tier != sandbox.TierMCP || out.MCP == nil || out.MCP.Tool != c.tool || out.MCP.Server != digest(t, server) || out.MCP.InnerTier != sandbox.TierBwrap {
				t.Errorf("got tier %q, mcp %+v, want mcp naming %s and the server's digest", out.Tier, out.MCP, c.tool)
			}
			if sum := sha256.Sum256(out.Output); out.OutputHash != "sha256:"+hex.EncodeToString(sum[:]) {
				t.Errorf("output hash %s does not cover the output", out.OutputHash)
			}
			if c.tool == "connect" {
				if out.Egress == nil || out.Egress.Refused != 1 || out.Egress.Allowed != 0 {
					t.Fatalf("got egress %+v, want one refused attempt", out.Egress)
				}
				if e := out.Egress.Entries[0]; e.Host != "evil.example" || e.Allowed || e.Reason != "not_allowed" {
					t.Errorf("got egress entry %+v, want evil.example refused as not_allowed", e)
				}
			}
		})
	}
}

// TestHTTPServer calls a streamable HTTP server through the egress proxy.
func TestHTTPServer(t *testing.T) {
	t.Parallel()
	s := sdk.NewServer(&sdk.Implementation{Name: "http-test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "shout"}, func(_ context.Context, _ *sdk.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.ToUpper(in.Text)}}}, nil, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	defer hs.Close()
	_, portText, _ := net.SplitHostPort(strings.TrimPrefix(hs.URL, "http://"))
	port, _ := strconv.Atoi(portText)
	d := newDriver(t)
	m := sandbox.Manifest{Name: "remote.shout", Tier: sandbox.TierMCP, MCP: &sandbox.MCP{Tool: "shout", URL: hs.URL + "/mcp"},
		Network: []sandbox.Destination{{Host: "127.0.0.1", Port: port}}}
	out, err := d.Run(context.Background(), sandbox.Invocation{Manifest: m, Params: []byte(`{"text":"quiet"}`), Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != sandbox.StatusOK || string(out.Output) != "QUIET" {
		t.Fatalf("got %s %q (%s), want ok QUIET", out.Status, out.Output, out.Reason)
	}
	if out.MCP == nil || out.MCP.Server != m.MCP.URL || out.MCP.Tool != "shout" {
		t.Errorf("got mcp %+v, want the URL and tool", out.MCP)
	}
	if out.Egress == nil || out.Egress.Allowed < 1 || out.Egress.Refused != 0 {
		t.Errorf("got egress %+v, want the allowed connections to the server", out.Egress)
	}
	// The listing goes the same way, and needs no inner tier.
	bare, err := mcptier.New(mcptier.Config{Inner: map[string]sandbox.Driver{}, Egress: sandboxtest.EgressConfig(t), ClientName: "t"})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := bare.List(context.Background(), sandbox.Invocation{Manifest: m})
	if err != nil || len(tools) != 1 || tools[0].Name != "shout" {
		t.Fatalf("List: %v, %v; want shout", tools, err)
	}
	// The proxy's rules hold: a name that resolves into a private range
	// (rebind.test, 10.9.9.9) is refused, and the result says so.
	m.MCP.URL = fmt.Sprintf("http://rebind.test:%d/mcp", port)
	m.Network = []sandbox.Destination{{Host: "rebind.test", Port: port}}
	out, err = d.Run(context.Background(), sandbox.Invocation{Manifest: m, Params: []byte(`{"text":"x"}`), Workspace: t.TempDir()})
	if err != nil || out.Status != sandbox.StatusError || out.Egress == nil || out.Egress.Refused < 1 || out.Egress.Allowed != 0 {
		t.Fatalf("rebind: %v, %s (%s), egress %+v; want an error and the refusal recorded", err, out.Status, out.Reason, out.Egress)
	}
	if e := out.Egress.Entries[0]; e.Reason != "special_address" {
		t.Errorf("got refusal %+v, want special_address", e)
	}
}

// TestList reads the test server's tools as writ tool import-mcp does.
func TestList(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	server := sandboxtest.BuildTool(t, serverPackage, runtime.GOOS, runtime.GOARCH)
	m := sandbox.Manifest{Name: "srv", Tier: sandbox.TierMCP, Command: &sandbox.Command{Path: server},
		MCP: &sandbox.MCP{Tool: "tools/list", InnerTier: sandbox.TierBwrap}}
	tools, err := d.List(context.Background(), sandbox.Invocation{Manifest: m, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tool := range tools {
		b, _ := jsonx.Marshal(tool.InputSchema)
		got[tool.Name] = string(b)
	}
	if len(got) != 4 || !strings.Contains(got["echo"], `"text"`) || !strings.Contains(got["connect"], `"port"`) {
		t.Fatalf("got tools %v, want echo, fail, sleep and connect with their schemas", got)
	}
}

// TestHTTPOutputLimit: an HTTP server that sends more than the output
// limit allows is cut off, and the run says output_limit.
func TestHTTPOutputLimit(t *testing.T) {
	t.Parallel()
	s := sdk.NewServer(&sdk.Implementation{Name: "http-test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "flood"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Repeat("x", 1<<20)}}}, nil, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	defer hs.Close()
	_, portText, _ := net.SplitHostPort(strings.TrimPrefix(hs.URL, "http://"))
	port, _ := strconv.Atoi(portText)
	d := newDriver(t)
	m := sandbox.Manifest{Name: "remote.flood", Tier: sandbox.TierMCP, MCP: &sandbox.MCP{Tool: "flood", URL: hs.URL},
		Network: []sandbox.Destination{{Host: "127.0.0.1", Port: port}}, Limits: sandbox.Limits{OutputBytes: 1024}}
	out, err := d.Run(context.Background(), sandbox.Invocation{Manifest: m, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != sandbox.StatusOutputLimit || len(out.Output) != 0 {
		t.Fatalf("got %s with %d bytes (%s), want output_limit and no output", out.Status, len(out.Output), out.Reason)
	}
}

// TestStdioEnds: a server that keeps running after its stdin ends is
// killed after the grace, and the call it answered stands; a call that
// outlasts timeout_ms is a timeout; a stdio server also runs in the
// process tier.
func TestStdioEnds(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	server := sandboxtest.BuildTool(t, serverPackage, runtime.GOOS, runtime.GOARCH)
	ws := t.TempDir()
	linger := sandbox.Manifest{Name: "srv.echo", Tier: sandbox.TierMCP, Command: &sandbox.Command{Path: server, Args: []string{"-linger"}},
		MCP: &sandbox.MCP{Tool: "echo", InnerTier: sandbox.TierBwrap}}
	start := time.Now()
	out, err := d.Run(context.Background(), sandbox.Invocation{Manifest: linger, Params: []byte(`{"text":"x"}`), Workspace: ws})
	if err != nil || out.Status != sandbox.StatusOK || string(out.Output) != "echo: x" {
		t.Fatalf("lingering server: %v, %s %q (%s)", err, out.Status, out.Output, out.Reason)
	}
	if wall := time.Since(start); wall > 20*time.Second {
		t.Errorf("the lingering server's run took %v: it was not stopped after the grace", wall)
	}
	slow := sandbox.Manifest{Name: "srv.sleep", Tier: sandbox.TierMCP, Command: &sandbox.Command{Path: server},
		MCP: &sandbox.MCP{Tool: "sleep", InnerTier: sandbox.TierBwrap}, Limits: sandbox.Limits{TimeoutMS: 1500}}
	out, err = d.Run(context.Background(), sandbox.Invocation{Manifest: slow, Params: []byte(`{"seconds":60}`), Workspace: ws})
	if err != nil || out.Status != sandbox.StatusTimeout || out.Reason != "wall" || len(out.Output) != 0 {
		t.Fatalf("slow call: %v, %s %q (%s), want timeout wall", err, out.Status, out.Output, out.Reason)
	}
	// The agent's own tiers: process, where it works here.
	pcfg := process.DefaultConfig()
	p, err := process.New(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, "process", p.Available())
	cfg := mcptier.DefaultConfig()
	cfg.Inner[sandbox.TierProcess] = p
	pd, err := mcptier.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := sandbox.Manifest{Name: "srv.echo", Tier: sandbox.TierMCP, Command: &sandbox.Command{Path: server},
		MCP: &sandbox.MCP{Tool: "echo", InnerTier: sandbox.TierProcess}}
	out, err = pd.Run(context.Background(), sandbox.Invocation{Manifest: m, Params: []byte(`{"text":"p"}`), Workspace: t.TempDir()})
	if err != nil || out.Status != sandbox.StatusOK || string(out.Output) != "echo: p" || out.MCP.InnerTier != sandbox.TierProcess {
		t.Fatalf("process tier: %v, %s %q (%s) %+v", err, out.Status, out.Output, out.Reason, out.MCP)
	}
	// An inner tier this driver has not is refused, never run elsewhere.
	m.MCP.InnerTier = sandbox.TierBwrap
	out, err = pd.Run(context.Background(), sandbox.Invocation{Manifest: m, Params: []byte(`{}`), Workspace: t.TempDir()})
	if !errors.Is(err, sandbox.ErrRefused) || out.Status != sandbox.StatusRefused || out.Tier != sandbox.TierMCP {
		t.Fatalf("bwrap through a driver without it: %v, %s %s", err, out.Status, out.Tier)
	}
}
