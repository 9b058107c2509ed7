package mcptier

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/writhq/writ/sandbox"
)

// reach talks to a streamable HTTP server. The agent is the client; every
// connection it makes goes through an egress proxy session with the
// manifest's allowlist, served on a loopback listener of the agent's for
// this run only, so the server is reached exactly as a sandboxed tool
// would reach it, and the run's egress record shows it.
func (d *Driver) reach(ctx context.Context, m sandbox.Manifest, talk func(context.Context, sdk.Transport)) (sandbox.Outcome, error) {
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
	// What the server sends is bounded as a stdio server's output is: the
	// output limit, plus room for the protocol around the content.
	budget := &readBudget{left: m.Limits.OutputBytes + httpSlack}
	ctx, cancel := context.WithTimeout(ctx, m.Limits.Timeout())
	defer cancel()
	client := &http.Client{Transport: &http.Transport{
		Proxy: nil, // the dialer below is the proxy's client
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := connectVia(ctx, proxyAddr, addr)
			if err != nil {
				return nil, err
			}
			return &budgetConn{Conn: c, b: budget}, nil
		},
		MaxResponseHeaderBytes: 64 << 10,
	}}
	start := time.Now()
	talk(ctx, &sdk.StreamableClientTransport{Endpoint: m.MCP.URL, HTTPClient: client, MaxRetries: -1,
		DisableStandaloneSSE: true})
	client.CloseIdleConnections()
	s.Close()
	out := sandbox.Outcome{Tier: d.Name(), ExitCode: -1, Usage: sandbox.Usage{Wall: time.Since(start)}, Egress: s.Audit()}
	switch {
	case budget.exceeded():
		out.Status, out.Reason = sandbox.StatusOutputLimit, fmt.Sprintf("the server sent more than %d bytes", m.Limits.OutputBytes+httpSlack)
	case ctx.Err() != nil:
		out.Status, out.Reason = sandbox.StatusTimeout, "wall"
	}
	return out, nil
}

// httpSlack is what an HTTP server may send beyond the output limit:
// headers, the JSON-RPC envelope, the initialize answer.
const httpSlack = 256 << 10

// readBudget is how many bytes all connections of one run may still read.
type readBudget struct {
	mu   sync.Mutex
	left int64
	over bool
}

func (b *readBudget) take(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left -= int64(n)
	if b.left < 0 {
		b.over = true
	}
	return !b.over
}

func (b *readBudget) exceeded() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.over
}

// budgetConn fails its reads once the run's budget is spent.
type budgetConn struct {
	net.Conn
	b *readBudget
}

func (c *budgetConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.b.take(n) {
		c.Conn.Close()
		return 0, errors.New("mcp: the server sent more than the run may read")
	}
	return n, err
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
