package controlplane

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/writhq/writ/internal/secretfile"
	"github.com/writhq/writ/ledger"
	"golang.org/x/mod/sumdb/note"
)

// File is the server configuration file (JSON; documented in
// docs/controlplane.md). Every member is optional but those Validate needs.
type File struct {
	ID       string `json:"id,omitzero"`
	DataDir  string `json:"data_dir,omitzero"`
	HTTPAddr string `json:"http_addr,omitzero"`
	RaftAddr string `json:"raft_addr,omitzero"`
	// AgentAddr serves node sessions (QUIC over UDP; needs tls.ca_key_file).
	AgentAddr string `json:"agent_addr,omitzero"`
	// AgentHeartbeat is how often agents report (a duration, 100ms to 25s);
	// a session silent for three of them is over, on both sides.
	AgentHeartbeat string `json:"agent_heartbeat,omitzero"`
	// NodeWait is how long an intent no ready node may run waits queued for
	// one (a duration, 0 to 1h; every server must agree).
	NodeWait         string   `json:"node_wait,omitzero"`
	Bootstrap        *bool    `json:"bootstrap,omitzero"`
	GossipAddr       string   `json:"gossip_addr,omitzero"`
	Join             []string `json:"join,omitzero"`
	BootstrapExpect  int      `json:"bootstrap_expect,omitzero"`
	TLS              TLSFiles `json:"tls,omitzero"`
	KeyringFile      string   `json:"keyring_file,omitzero"`
	AdminTokenHashes []string `json:"admin_token_hashes,omitzero"`
	// OutputRetention (a duration, at most 24h) and OutputMaxBytes bound
	// the tools' outputs every server keeps beside the intents.
	OutputRetention string `json:"output_retention,omitzero"`
	OutputMaxBytes  *int64 `json:"output_max_bytes,omitzero"`
	Ledger          struct {
		Origin   string `json:"origin,omitzero"`
		SeedFile string `json:"seed_file,omitzero"`
	} `json:"ledger,omitzero"`
	// Webhooks receive approval notifications; each secret is read from a
	// file only its owner can read.
	Webhooks []struct {
		URL         string   `json:"url"`
		Events      []string `json:"events,omitzero"`
		SecretFile  string   `json:"secret_file"`
		MaxAttempts int      `json:"max_attempts,omitzero"`
		RetryDelay  string   `json:"retry_delay,omitzero"`
	} `json:"webhooks,omitzero"`
	Limits struct {
		MaxTTL       string `json:"max_ttl,omitzero"`
		Skew         string `json:"skew,omitzero"`
		MaxBodyBytes int    `json:"max_body_bytes,omitzero"`
		MaxInFlight  int    `json:"max_in_flight,omitzero"`
		// MaxInFlightBytes bounds the cost of the admissions in flight;
		// MaxQueued the intents queued for a node (0: no bound).
		MaxInFlightBytes int64 `json:"max_in_flight_bytes,omitzero"`
		MaxQueued        *int  `json:"max_queued,omitzero"`
		// MemoryLimit is the server process's soft memory limit in bytes
		// (Go's GOMEMLIMIT, which takes precedence when set); 0: none.
		MemoryLimit int64 `json:"memory_limit,omitzero"`
		// MaxSessionsPerUser caps each dashboard user's sessions.
		MaxSessionsPerUser int `json:"max_sessions_per_user,omitzero"`
	} `json:"limits,omitzero"`
}

// LoadFile reads a configuration file strictly: unknown members are errors,
// so that a misspelt setting is never silently ignored.
func LoadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f File
	if err := json.Unmarshal(b, &f, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &f, nil
}

// Apply sets the members the file sets on top of cfg.
func (f *File) Apply(cfg *Config) error {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&cfg.ID, f.ID)
	set(&cfg.DataDir, f.DataDir)
	set(&cfg.HTTPAddr, f.HTTPAddr)
	set(&cfg.RaftAddr, f.RaftAddr)
	set(&cfg.KeyringFile, f.KeyringFile)
	set(&cfg.TLS.CAFile, f.TLS.CAFile)
	set(&cfg.TLS.CertFile, f.TLS.CertFile)
	set(&cfg.TLS.KeyFile, f.TLS.KeyFile)
	set(&cfg.TLS.CAKeyFile, f.TLS.CAKeyFile)
	set(&cfg.AgentAddr, f.AgentAddr)
	if f.Bootstrap != nil {
		cfg.Bootstrap = *f.Bootstrap
	}
	set(&cfg.Cluster.GossipAddr, f.GossipAddr)
	if f.Join != nil {
		cfg.Cluster.Join = f.Join
	}
	if f.BootstrapExpect != 0 {
		cfg.Cluster.BootstrapExpect = f.BootstrapExpect
	}
	if f.AdminTokenHashes != nil {
		cfg.AdminTokenHashes = f.AdminTokenHashes
	}
	for _, d := range []struct {
		name, s string
		dst     *time.Duration
	}{{"limits.max_ttl", f.Limits.MaxTTL, &cfg.Verify.MaxTTL}, {"limits.skew", f.Limits.Skew, &cfg.Verify.Skew},
		{"agent_heartbeat", f.AgentHeartbeat, &cfg.AgentHeartbeat}, {"node_wait", f.NodeWait, &cfg.FSM.NodeWait},
		{"output_retention", f.OutputRetention, &cfg.FSM.OutputRetention}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil {
			return fmt.Errorf("%s: %q is not a duration", d.name, d.s)
		}
		*d.dst = v
	}
	if f.OutputMaxBytes != nil {
		cfg.FSM.OutputMaxBytes = *f.OutputMaxBytes
	}
	if f.Limits.MaxBodyBytes > 0 {
		cfg.Verify.MaxBytes = f.Limits.MaxBodyBytes
	}
	if f.Limits.MaxInFlight > 0 {
		cfg.MaxInFlight = f.Limits.MaxInFlight
	}
	if f.Limits.MaxInFlightBytes > 0 {
		cfg.MaxInFlightBytes = f.Limits.MaxInFlightBytes
	}
	if f.Limits.MaxQueued != nil {
		cfg.MaxQueued = *f.Limits.MaxQueued
	}
	if f.Limits.MaxSessionsPerUser > 0 {
		cfg.MaxSessionsPerUser = f.Limits.MaxSessionsPerUser
	}
	for _, h := range f.Webhooks {
		if err := secretfile.Check(h.SecretFile); err != nil {
			return fmt.Errorf("webhooks: %w", err)
		}
		secret, err := os.ReadFile(h.SecretFile)
		if err != nil {
			return fmt.Errorf("webhooks: %w", err)
		}
		hook := Webhook{URL: h.URL, Events: h.Events, Secret: bytes.TrimSpace(secret), MaxAttempts: h.MaxAttempts}
		if h.RetryDelay != "" {
			if hook.RetryDelay, err = time.ParseDuration(h.RetryDelay); err != nil {
				return fmt.Errorf("webhooks: retry_delay %q is not a duration", h.RetryDelay)
			}
		}
		cfg.Webhooks = append(cfg.Webhooks, hook)
	}
	if f.Ledger.SeedFile != "" {
		signer, vkey, err := LedgerKey(f.Ledger.Origin, f.Ledger.SeedFile)
		if err != nil {
			return err
		}
		cfg.LedgerSigner, cfg.LedgerVerifierKey = signer, vkey
	}
	return nil
}

// LedgerKey reads the checkpoint signing key: a file holding the base64 of a
// 32-byte Ed25519 seed (as writ keygen ed25519 writes it, mode 0600), for the
// log named origin.
func LedgerKey(origin, seedFile string) (note.Signer, string, error) {
	if origin == "" {
		return nil, "", errors.New("ledger: an origin (the log's name, such as example.com/writ) is required")
	}
	fi, err := os.Stat(seedFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("ledger: seed file %s does not exist", seedFile)
	}
	if err != nil {
		return nil, "", err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, "", fmt.Errorf("ledger: %s is readable by others (mode %v); it must be 0600", seedFile, fi.Mode().Perm())
	}
	b, err := os.ReadFile(seedFile)
	if err != nil {
		return nil, "", err
	}
	seed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, "", fmt.Errorf("ledger: %s is not base64", seedFile)
	}
	return ledger.NewSigner(origin, seed)
}
