// Package egress is the agent's egress proxy: the only way out of the empty
// network namespace a tool with a network allowlist runs in. A tool reaches
// it on the namespace's loopback, either as an HTTP proxy (CONNECT) or by
// connecting to an allowlisted port directly with TLS, whose server name
// (SNI) says where to go. The proxy lets through only the manifest's
// destinations, resolves names itself and connects to the very addresses it
// checked (no second lookup a DNS rebinding could change), and refuses
// loopback, private, link-local, CGNAT and metadata addresses unless the
// manifest lists that address literally or the operator allows its range.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// Resolver looks names up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer opens upstream connections; *net.Dialer is one.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Config configures the proxy of one agent.
type Config struct {
	// Resolver resolves allowlisted names; nil means net.DefaultResolver.
	Resolver Resolver
	// Dialer connects upstream from the agent's network; nil means a
	// net.Dialer with DialTimeout.
	Dialer Dialer
	// AllowSpecial lists special ranges (see Special) the operator lets
	// allowlisted names resolve into, e.g. an internal API's subnet.
	AllowSpecial []netip.Prefix
	// ProxyPort is where the HTTP proxy listens in the tool's namespace
	// (HTTPS_PROXY=http://127.0.0.1:ProxyPort). An allowlisted port equal
	// to it simply shares the listener.
	ProxyPort int
	// HandshakeTimeout bounds reading a CONNECT request or a ClientHello.
	HandshakeTimeout time.Duration
	// DialTimeout bounds one upstream connection attempt.
	DialTimeout time.Duration
	// MaxConns bounds the connections one invocation holds at once.
	MaxConns int
}

// DefaultConfig returns the proxy configuration an agent uses unless told
// otherwise.
func DefaultConfig() Config {
	return Config{ProxyPort: 3128, HandshakeTimeout: 10 * time.Second, DialTimeout: 10 * time.Second, MaxConns: 64}
}

// Validate checks c.
func (c Config) Validate() error {
	switch {
	case c.ProxyPort < 1 || c.ProxyPort > 65535:
		return fmt.Errorf("egress: ProxyPort %d out of range", c.ProxyPort)
	case c.HandshakeTimeout <= 0 || c.DialTimeout <= 0:
		return errors.New("egress: timeouts must be positive")
	case c.MaxConns < 1:
		return errors.New("egress: MaxConns must be at least 1")
	}
	for _, p := range c.AllowSpecial {
		if !p.IsValid() {
			return errors.New("egress: invalid AllowSpecial prefix")
		}
	}
	return nil
}

// Errors of the proxy. Each has a stable code (Code) that decisions carry.
var (
	ErrBadHost     = errors.New("egress: bad host")
	ErrBadRequest  = errors.New("egress: bad request")
	ErrNotAllowed  = errors.New("egress: destination not in the allowlist")
	ErrSpecialAddr = errors.New("egress: address in a special range")
	ErrResolve     = errors.New("egress: name did not resolve")
	ErrDial        = errors.New("egress: upstream connection failed")
	ErrUnsupported = errors.New("egress: network namespaces unavailable")
	// ErrSNIMismatch refuses a TLS ClientHello sent through a CONNECT
	// tunnel whose server name is not the CONNECT host (domain fronting:
	// a shared front end routes by the name inside TLS, not by the
	// address the proxy checked).
	ErrSNIMismatch = errors.New("egress: TLS server name differs from the CONNECT host")
)

// Code returns the stable code of a proxy error: "bad_request",
// "not_allowed", "special_address", "resolve_failed", "dial_failed",
// "sni_mismatch", or "" for nil.
func Code(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrNotAllowed):
		return "not_allowed"
	case errors.Is(err, ErrSpecialAddr):
		return "special_address"
	case errors.Is(err, ErrResolve):
		return "resolve_failed"
	case errors.Is(err, ErrDial):
		return "dial_failed"
	case errors.Is(err, ErrSNIMismatch):
		return "sni_mismatch"
	}
	return "bad_request"
}
