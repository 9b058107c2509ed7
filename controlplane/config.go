package controlplane

import (
	"errors"
	"log/slog"
	"net"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/protocol"
)

// Config configures one server.
type Config struct {
	// ID names the server in the cluster; it is its Raft id.
	ID string
	// DataDir holds the Raft log and snapshots, the keyring and the TLS files.
	DataDir string
	// HTTPAddr serves the API; RaftAddr serves Raft over mutual TLS.
	HTTPAddr, RaftAddr string
	// AgentAddr is the UDP address of node sessions (QUIC, mutual TLS, ALPN
	// writ/1). Empty: this server takes no node sessions.
	AgentAddr string
	// NodeCertValidity is the life of a node's client certificate; agents
	// renew at two thirds of it. AgentHeartbeat is how often agents report.
	NodeCertValidity time.Duration
	AgentHeartbeat   time.Duration
	// Bootstrap forms a new single-server cluster when DataDir is empty.
	Bootstrap bool
	// Cluster configures discovery, joining and bootstrap_expect.
	Cluster ClusterConfig
	// Dev allows plain HTTP, and only on a loopback address, and creates the
	// cluster CA and keyring on first start. Outside dev mode the API is
	// served over TLS with TLS.CertFile, Raft uses the same certificate, and
	// the keyring must exist.
	Dev bool
	// TLS names the cluster CA and this server's certificate and key (which
	// must name writ://server/ID). Required outside dev mode.
	TLS TLSFiles
	// KeyringFile holds the cluster key that seals orchestrator secrets (one
	// line of base64 of 32 bytes, mode 0600). Default: DataDir/keyring.
	KeyringFile string
	// AdminTokenHashes are the SHA-256 hashes (protocol hash form) of the
	// tokens that may use the admin API.
	AdminTokenHashes []string
	// Verify sets the intent TTL, clock skew and body size limits.
	Verify protocol.Config
	// FSM sets the replicated retention windows; every server MUST agree.
	FSM fsm.Config
	// MaxWait bounds ?wait= (PROTOCOL.md: at most 60 s).
	MaxWait time.Duration
	// TickInterval is how often the leader proposes its clock, which expires
	// intents and prunes what has passed its retention.
	TickInterval time.Duration
	// MaxInFlight bounds admissions and approvals being processed, and
	// MaxInFlightBytes their cost: each is charged its body's announced size
	// plus 8 KiB. Past either, requests get 429 overloaded at once, before
	// their bodies are read.
	MaxInFlight      int
	MaxInFlightBytes int64
	// MaxQueued bounds the intents queued for a node (waiting for a slot or
	// for a node to connect): while the queue holds this many, submissions
	// get 429 overloaded at once, at the leader and at followers alike, so
	// that a backlog the nodes cannot run holds bounded memory. 0: no bound.
	MaxQueued int
	// FailuresPerSecond and FailureBurst limit, per source address, answers
	// to requests that fail authentication; past them a failure is answered
	// 429 overloaded, held FailureDelay, with at most FailureHeld held per
	// source at once. Requests that verify are never refused for their
	// source's failures (docs/controlplane.md, "Overload and bad input").
	FailuresPerSecond float64
	FailureBurst      int
	FailureDelay      time.Duration
	FailureHeld       int
	// MaxSessionsPerUser caps each dashboard user's open sessions (a
	// configured admin token counts as one user); signing in once more
	// closes the user's oldest session.
	MaxSessionsPerUser int
	// LedgerSigner signs the receipt log's checkpoints, whose verifier key is
	// LedgerVerifierKey; the signer's name is the log's origin.
	LedgerSigner      note.Signer
	LedgerVerifierKey string
	// RaftCommitTimeout is Raft's CommitTimeout (0:
	// raftnode.DefaultCommitTimeout, 50 ms): how long the leader lets an
	// idle follower go without an AppendEntries. Followers learn of the
	// commits of admissions, results and every other command at once
	// anyway (raftnode's commit beacon); each idle follower costs an empty
	// AppendEntries per one to two of these.
	RaftCommitTimeout time.Duration
	// RaftLogStore is raftnode.LogStoreBolt (the default, ""); the others
	// (raftnode.LogStores) are there for writ bench admit to compare.
	RaftLogStore string
	// raftTimeouts, when not zero, replace Raft's heartbeat and election
	// timeouts (1 s each) and its leader lease (500 ms). Only this
	// package's tests set them: a cluster of three servers in one test
	// process under -race on a loaded machine starves for longer than
	// Raft's defaults allow, and changes leader while the test looks.
	raftTimeouts time.Duration
	// PublishInterval is how often the leader publishes a checkpoint when
	// receipts were added (PROTOCOL: at most every 100 ms under load).
	PublishInterval time.Duration
	// Webhooks receive approval notifications from the leader (webhooks.go,
	// docs/controlplane.md "Webhooks").
	Webhooks []Webhook
	Logger   *slog.Logger
}

// TLSFiles are PEM files: the cluster CA, and a certificate and its key.
type TLSFiles struct {
	CAFile   string `json:"ca_file"`
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file"`
	// CAKeyFile is the cluster CA's key. Servers that enroll nodes, renew
	// their certificates and sign dispatches hold it (as Nomad and Consul
	// servers hold theirs); required when AgentAddr is set.
	CAKeyFile string `json:"ca_key_file,omitzero"`
}

// DefaultConfig returns a server configuration with the protocol's defaults.
func DefaultConfig() Config {
	return Config{
		HTTPAddr: "127.0.0.1:7070", RaftAddr: "127.0.0.1:7071",
		Verify: protocol.DefaultConfig(), FSM: fsm.DefaultConfig(),
		MaxWait: 60 * time.Second, TickInterval: time.Second,
		MaxInFlight: 1024, MaxInFlightBytes: 32 << 20, MaxQueued: 4096, FailuresPerSecond: 5, FailureBurst: 20, FailureDelay: time.Second, FailureHeld: 64,
		MaxSessionsPerUser: 10,
		PublishInterval:    100 * time.Millisecond,
		NodeCertValidity:   24 * time.Hour, AgentHeartbeat: 10 * time.Second,
	}
}

// Validate refuses configurations that are unsafe or cannot run.
func (c *Config) Validate() error {
	switch {
	case c.ID == "":
		return errors.New("controlplane: the server needs an id")
	case c.DataDir == "":
		return errors.New("controlplane: the server needs a data directory")
	case c.MaxWait <= 0 || c.MaxWait > 60*time.Second:
		return errors.New("controlplane: MaxWait must be in (0, 60s]")
	case c.TickInterval <= 0:
		return errors.New("controlplane: TickInterval must be positive")
	case c.MaxInFlight <= 0 || c.FailuresPerSecond <= 0 || c.FailureBurst <= 0 || c.FailureHeld <= 0:
		return errors.New("controlplane: MaxInFlight, FailuresPerSecond, FailureBurst and FailureHeld must be positive")
	case c.MaxInFlightBytes < requestCost:
		return errors.New("controlplane: MaxInFlightBytes must be at least 8 KiB (one request's cost)")
	case c.MaxQueued < 0:
		return errors.New("controlplane: MaxQueued must not be negative")
	case c.MaxSessionsPerUser < 1 || c.MaxSessionsPerUser > fsm.MaxSessions:
		return errors.New("controlplane: MaxSessionsPerUser must be between 1 and 10,000")
	case c.FailureDelay < 0 || c.FailureDelay > 10*time.Second:
		return errors.New("controlplane: FailureDelay must be between 0 and 10s")
	case c.LedgerSigner == nil || c.LedgerVerifierKey == "":
		return errors.New("controlplane: the ledger needs a checkpoint signer and its verifier key")
	case c.PublishInterval <= 0:
		return errors.New("controlplane: PublishInterval must be positive")
	case c.AgentAddr != "" && (c.NodeCertValidity < 10*time.Minute || c.NodeCertValidity > 90*24*time.Hour):
		return errors.New("controlplane: node certificates must live between 10 minutes and 90 days")
	case c.AgentAddr != "" && (c.AgentHeartbeat < 100*time.Millisecond || c.AgentHeartbeat > 25*time.Second):
		return errors.New("controlplane: the agent heartbeat must be between 100ms and 25s (NAT mappings close after about 30 s)")
	}
	if c.Dev {
		host, _, err := net.SplitHostPort(c.HTTPAddr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return errors.New("controlplane: dev mode serves plain HTTP, so only on a loopback address")
		}
	} else {
		if c.TLS.CAFile == "" || c.TLS.CertFile == "" || c.TLS.KeyFile == "" {
			return errors.New("controlplane: a server needs tls.ca_file, tls.cert_file and tls.key_file: the API and Raft are never plaintext outside dev mode")
		}
	}
	for i := range c.Webhooks {
		if err := c.Webhooks[i].validate(); err != nil {
			return err
		}
	}
	if err := c.validateCluster(); err != nil {
		return err
	}
	if c.AgentAddr != "" && !c.Dev && c.TLS.CAKeyFile == "" {
		return errors.New("controlplane: a server that takes node sessions (agent_addr) needs tls.ca_key_file to enroll nodes and certify its dispatch key")
	}
	if err := c.Verify.Validate(); err != nil {
		return err
	}
	if c.Verify.MaxTTL+c.Verify.Skew >= c.FSM.IdempotencyRetention {
		return errors.New("controlplane: the intent TTL plus skew must be well under the idempotency retention, or a waiting intent could outlive its key")
	}
	return c.FSM.Validate()
}
