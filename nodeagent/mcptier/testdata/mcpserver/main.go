// Command mcpserver is the MCP server the mcp tier's tests run: a stdio
// server (or, with -http ADDR, a streamable HTTP one) of four tools —
// echo, fail, sleep, and connect, which asks the HTTPS proxy of its
// environment for a tunnel, as a tool that wants the network does. With
// -linger it does not exit when its stdin ends.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

type sleepIn struct {
	Seconds int `json:"seconds" jsonschema:"how long to sleep"`
}

type connectIn struct {
	Host string `json:"host" jsonschema:"destination host"`
	Port int    `json:"port" jsonschema:"destination port"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "writ-test-server", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text("echo: " + in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always reports an error."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			r := text("failed on purpose")
			r.IsError = true
			return r, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Sleeps, then answers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
			time.Sleep(time.Duration(in.Seconds) * time.Second)
			return text("slept"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "connect", Description: "Asks the HTTPS proxy for a tunnel to host:port."},
		func(_ context.Context, _ *mcp.CallToolRequest, in connectIn) (*mcp.CallToolResult, any, error) {
			return text(tunnel(in.Host, in.Port)), nil, nil
		})
	return s
}

// tunnel reports what the proxy of HTTPS_PROXY answered to a CONNECT to
// host:port ("no proxy" without one, "dial: ..." when it cannot be
// reached).
func tunnel(host string, port int) string {
	p := os.Getenv("HTTPS_PROXY")
	if p == "" {
		return "no proxy"
	}
	c, err := net.Dial("tcp", strings.TrimPrefix(p, "http://"))
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	addr := net.JoinHostPort(host, fmt.Sprint(port))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "read: " + err.Error()
	}
	return strings.TrimSpace(line)
}

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	linger := flag.Bool("linger", false, "keep running after stdin ends")
	flag.Parse()
	s := server()
	if *addr != "" {
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
		log.Fatal(http.ListenAndServe(*addr, h))
	}
	err := s.Run(context.Background(), &mcp.StdioTransport{})
	if *linger {
		time.Sleep(time.Hour)
	}
	if err != nil {
		log.Fatal(err)
	}
}
