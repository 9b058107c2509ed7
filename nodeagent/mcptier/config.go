package mcptier

import (
	"errors"
	"fmt"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/egress"
)

// Config configures the mcp tier.
type Config struct {
	// Inner holds the drivers stdio servers may run in, by tier name; a
	// tier missing here, or whose driver cannot hold a conversation
	// (sandbox.Conversing), refuses its servers.
	Inner map[string]sandbox.Driver
	// Egress configures the proxy HTTP servers are reached through.
	Egress egress.Config
	// ClientName is the name the driver gives itself in initialize.
	ClientName string
}

// DefaultConfig returns the configuration an agent uses, without inner
// drivers: the caller adds those it probed.
func DefaultConfig() Config {
	return Config{Inner: map[string]sandbox.Driver{}, Egress: egress.DefaultConfig(), ClientName: "writ-agent"}
}

// Validate checks c.
func (c Config) Validate() error {
	if c.ClientName == "" {
		return errors.New("mcp: ClientName is empty")
	}
	for name, d := range c.Inner {
		if d == nil || d.Name() != name {
			return fmt.Errorf("mcp: inner driver registered as %q is not that tier's", name)
		}
	}
	return c.Egress.Validate()
}
