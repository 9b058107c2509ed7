package protocol

import (
	"crypto/ed25519"
	"errors"
	"time"
)

// Config sets the limits a Verifier enforces.
type Config struct {
	// MaxTTL bounds expires_at - issued_at of intents and dispatches.
	MaxTTL time.Duration
	// Skew is how far in the future issued_at may be, for clocks that disagree.
	Skew time.Duration
	// MaxBytes bounds the size of one encoded object.
	MaxBytes int
	// Now is the clock. Tests inject a fixed one.
	Now func() time.Time
}

// DefaultConfig returns the protocol defaults: 15 minute TTL, 30 s skew, 1 MiB
// objects, the system clock.
func DefaultConfig() Config {
	return Config{MaxTTL: 15 * time.Minute, Skew: 30 * time.Second, MaxBytes: DefaultMaxBytes, Now: time.Now}
}

// Validate reports a configuration that would verify nothing sensibly.
func (c Config) Validate() error {
	switch {
	case c.MaxTTL <= 0:
		return errors.New("protocol: MaxTTL must be positive")
	case c.Skew < 0:
		return errors.New("protocol: Skew must not be negative")
	case c.MaxBytes <= 0:
		return errors.New("protocol: MaxBytes must be positive")
	case c.Now == nil:
		return errors.New("protocol: Now must be set")
	}
	return nil
}

// IntentKeys finds orchestrator HMAC secrets. A key signs for one tenant only:
// IntentKey MUST report ok=false for a key that exists but belongs to another
// tenant, so that it is reported as unknown_key.
type IntentKeys interface {
	IntentKey(tenant, keyID string) (secret []byte, ok bool)
}

// ApproverKey is a registered approver public key and the identity it belongs to.
type ApproverKey struct {
	Public ed25519.PublicKey
	// Approver is the identity the key signs as. An approval naming another
	// approver is approval_invalid. Empty means the key is not bound to an
	// identity; the control plane always binds its keys.
	Approver string
}

// ApproverKeys finds approver public keys registered for a tenant.
type ApproverKeys interface {
	ApproverKey(tenant, keyID string) (ApproverKey, bool)
}

// SignerKeys finds the Ed25519 public keys of servers (for dispatches) or nodes
// (for results).
type SignerKeys interface {
	SignerKey(keyID string) (ed25519.PublicKey, bool)
}

// NonceSet reports whether an approval nonce has been consumed. Consumption
// itself happens where it can be made durable and cluster-wide (the FSM).
type NonceSet interface {
	Consumed(nonce string) bool
}

// ApprovalPolicy decides whether an approver may approve an intent. Self-approval
// is refused by the Verifier before the policy is asked.
type ApprovalPolicy interface {
	MayApprove(intent *Intent, approval *Approval) bool
}

// Verifier checks signed objects against keys, the clock and the limits of its
// Config, and reports the protocol's stable error codes in the protocol's order.
// It is safe for concurrent use if its key lookups are.
type Verifier struct {
	cfg Config
}

// NewVerifier returns a Verifier for a valid Config.
func NewVerifier(cfg Config) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Verifier{cfg: cfg}, nil
}

// Config returns the verifier's configuration.
func (v *Verifier) Config() Config { return v.cfg }

// window checks a validity window: TTL, then not yet valid, then expired.
func (v *Verifier) window(issuedAt, expiresAt string) error {
	issued, expires, err := checkTimes(issuedAt, expiresAt)
	if err != nil {
		return err
	}
	now := v.cfg.Now()
	switch {
	case expires.Sub(issued) > v.cfg.MaxTTL:
		return fail(CodeTTLTooLong, "expires_at - issued_at is %s, over the maximum of %s", expires.Sub(issued), v.cfg.MaxTTL)
	case issued.After(now.Add(v.cfg.Skew)):
		return fail(CodeNotYetValid, "issued_at is %s in the future, over the allowed skew of %s", issued.Sub(now), v.cfg.Skew)
	case !expires.After(now):
		return fail(CodeExpired, "expired at %s", expiresAt)
	}
	return nil
}
