package mcpserver

import (
	"errors"
	"log/slog"
	"time"

	"github.com/writhq/writ/client"
)

// Config is what a Server needs: a client of the control plane and the
// orchestrator identity every intent is signed as.
type Config struct {
	// Client reaches the control plane; New makes it sign its reads with
	// the orchestrator key (client.SignReads).
	Client *client.Client
	// Tenant and Principal are the intents' tenant and principal; KeyID and
	// Secret the tenant's orchestrator key that signs them.
	Tenant, Principal, KeyID string
	Secret                   []byte
	// Run, when set, is every intent's run id; otherwise each MCP session
	// is its own run (runID).
	Run string
	// ApprovalWait bounds how long a call waits for an approval; then it
	// returns isError with the intent id, and writ_intent_status answers
	// later.
	ApprovalWait time.Duration
	// IntentTTL is how long each intent stays valid (at most the server's
	// maximum TTL, 15 minutes by default).
	IntentTTL time.Duration
	// PollInterval is how often the tool catalog (GET /v1/tools) is read
	// to notice registrations that changed.
	PollInterval time.Duration
	// Logger receives the server's logs; never stdout, which is the stdio
	// transport's.
	Logger *slog.Logger
	// Now is the clock intents are signed with.
	Now func() time.Time
	// Version is what the server announces to clients as its version.
	Version string
	// ReportControlPlaneTime adds to each tools/call result's _meta how
	// long its requests to the control plane took (writ/control_plane_ns),
	// for writ bench mcp to take out of the call's latency.
	ReportControlPlaneTime bool
}

// DefaultConfig is a Config with the default waits; the caller fills in the
// client and the identity.
func DefaultConfig() Config {
	return Config{
		ApprovalWait: 120 * time.Second,
		IntentTTL:    10 * time.Minute,
		PollInterval: 3 * time.Second,
		Logger:       slog.New(slog.DiscardHandler),
		Now:          time.Now,
		Version:      "dev",
	}
}

// Validate reports the first missing or out-of-range field.
func (c *Config) Validate() error {
	switch {
	case c.Client == nil:
		return errors.New("mcp: no client")
	case c.Tenant == "" || c.Principal == "" || c.KeyID == "":
		return errors.New("mcp: tenant, principal and key id are required")
	case len(c.Secret) == 0:
		return errors.New("mcp: no orchestrator secret")
	case c.ApprovalWait <= 0:
		return errors.New("mcp: the approval wait must be positive")
	case c.IntentTTL < time.Minute || c.IntentTTL > 15*time.Minute:
		return errors.New("mcp: the intent TTL must be between 1 and 15 minutes")
	case c.ApprovalWait >= c.IntentTTL:
		return errors.New("mcp: the approval wait must be shorter than the intent TTL")
	case c.PollInterval < 100*time.Millisecond:
		return errors.New("mcp: the catalog poll interval must be at least 100ms")
	case c.Logger == nil || c.Now == nil:
		return errors.New("mcp: no logger or clock")
	}
	return nil
}
