package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/writhq/writ/client"
)

// Server is one `writ mcp`: an MCP server whose tools are the control
// plane's registered tools, each call an intent signed with Config's key.
// Its methods are safe for concurrent use.
type Server struct {
	cfg Config
	c   *client.Client
	mcp *mcp.Server

	// sessionless stands for the session of calls that have none.
	sessionless string

	mu    sync.Mutex
	tools map[string]string // registered name -> hash of what the catalog said about it
}

// New returns a Server for cfg; Sync loads the tools it offers.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Client.SignReads(cfg.Tenant, cfg.KeyID, cfg.Secret)
	// A call answers with its receipt as soon as it is final; the proof is
	// GET /v1/receipts/{index}'s to give.
	cfg.Client.NoProofWait = true
	s := &Server{cfg: cfg, c: cfg.Client, tools: map[string]string{}, sessionless: newSessionID()}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "writ", Title: "Writ", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: "Every tool call is a signed Writ intent: authorized by policy, approved where required, run in a sandbox on a node, and recorded with a receipt. A call that waits for approval returns its intent id; ask writ_intent_status about it later.",
		Logger:       cfg.Logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	s.addStatusTool()
	return s, nil
}

// MCP is the SDK server, for a transport to serve.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one connection on transport t (stdio: mcp.StdioTransport) and
// keeps the tools in step with the catalog, until the client disconnects or
// ctx ends; either is a clean end (nil).
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	run, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.Watch(run)
	err := s.mcp.Run(run, stampTransport{t})
	if ctx.Err() != nil {
		return nil // stopped by its caller (an interrupt): a clean end
	}
	return err
}

// runID is the run of the intents of a session: Config.Run, or one derived
// from the session id, which is not itself written anywhere (over HTTP it
// is what the client sends to be that session).
func (s *Server) runID(session string) string {
	if s.cfg.Run != "" {
		return s.cfg.Run
	}
	h := sha256.Sum256([]byte("writ-mcp-run\x00" + session))
	return "mcp-" + hex.EncodeToString(h[:16])
}

// idempotencyKey ties a call to its session and its JSON-RPC request id: a
// client that sends the request again gets the same intent back, never a
// second run.
func idempotencyKey(session, request string) string {
	h := sha256.Sum256([]byte("writ-mcp-call\x00" + session + "\x00" + request))
	return "mcp-" + hex.EncodeToString(h[:])
}
