package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

// newBenchMCPEcho is the floor of writ bench mcp: an MCP server over stdio,
// with the same SDK and the same collector setting as writ mcp, whose one
// tool, echo, answers its arguments as text. No Writ: a call through it
// costs the pipes, the second process and the SDK, and nothing else.
func newBenchMCPEcho(*env) *cobra.Command {
	return &cobra.Command{
		Use:    "mcp-echo",
		Short:  "The floor server of writ bench mcp: an MCP echo tool over stdio, no Writ",
		Hidden: true,
		// It prints nothing but MCP on stdout, whatever -o says.
		Annotations: map[string]string{"writ-output": "text"},
		Args:        cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			tuneMCPGC()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			err := echoMCPServer().Run(ctx, &mcp.StdioTransport{})
			if ctx.Err() != nil {
				return nil
			}
			return err
		},
	}
}

// echoMCPServer is the floor's server: the tool echo returns its arguments
// as they came.
func echoMCPServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "writ-bench-echo", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	return s
}
