package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/writhq/writ/sandbox"
)

// runHTTP calls a streamable HTTP server. The agent is the client; every
// connection it makes goes through an egress proxy session with the
// manifest's allowlist, served on a loopback listener of the agent's for
// this run only, so the server is reached exactly as a sandboxed tool
// would reach it, and the run's egress record shows it.
func (d *Driver) runHTTP(ctx context.Context, m sandbox.Manifest, args map[string]json.RawMessage) (sandbox.Outcome, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return sandbox.Refuse(d.Name(), fmt.Errorf("egress listener: %w", err))
	}
	s, err := d.proxy.Serve(ln, m.Network)
	if err != nil {
		ln.Close()
		return sandbox.Refuse(d.Name(), err)
	}
	proxyAddr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(ctx, m.Limits.Timeout())
	defer cancel()
	client := &http.Client{Transport: &http.Transport{
		Proxy: nil, // the dialer below is the proxy's client
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return connectVia(ctx, proxyAddr, addr)
		},
		MaxResponseHeaderBytes: 64 << 10,
	}}
	start := time.Now()
	c := d.call(ctx, &sdk.StreamableClientTransport{Endpoint: m.MCP.URL, HTTPClient: client, MaxRetries: -1,
		DisableStandaloneSSE: true}, m.MCP.Tool, args)
	client.CloseIdleConnections()
	s.Close()
	out := sandbox.Outcome{ExitCode: -1, Usage: sandbox.Usage{Wall: time.Since(start)}, Egress: s.Audit()}
	if ctx.Err() != nil && c.result == nil {
		out.Status, out.Reason = sandbox.StatusTimeout, "wall"
	}
	return finish(out, c, m, &sandbox.MCPCall{Tool: m.MCP.Tool, Server: m.MCP.URL}), nil
}

// connectVia opens a tunnel to addr through the HTTP proxy at proxy
// (CONNECT), as a sandboxed tool's HTTPS_PROXY client does.
func connectVia(ctx context.Context, proxy, addr string) (net.Conn, error) {
	var dl net.Dialer
	conn, err := dl.DialContext(ctx, "tcp", proxy)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if _, err := fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		conn.Close()
		return nil, fmt.Errorf("egress proxy refused %s: %s", addr, strconv.Quote(resp.Status))
	}
	if br.Buffered() > 0 {
		conn.Close()
		return nil, fmt.Errorf("egress proxy: data after the CONNECT answer")
	}
	conn.SetDeadline(time.Time{})
	return conn, nil
}
