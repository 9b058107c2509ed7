package controlplane

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/writhq/writ/controlplane/internal/policy"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/internal/secretfile"
	"github.com/writhq/writ/ledger"
	"github.com/writhq/writ/protocol"
)

// DevCredentials is dev.json (PROTOCOL.md §6): what a developer needs to
// submit and approve intents against `writ dev`.
type DevCredentials struct {
	Addr string `json:"addr"`
	// Addrs lists every server of a local cluster (make cluster); CAFile is
	// its cluster CA, which clients trust for https.
	Addrs        []string   `json:"addrs,omitempty"`
	CAFile       string     `json:"ca_file,omitempty"`
	Tenant       string     `json:"tenant"`
	Orchestrator DevHMACKey `json:"orchestrator"`
	Approver     DevEdKey   `json:"approver"`
	AdminToken   string     `json:"admin_token"`
	LedgerKey    string     `json:"ledger_key"`
	// LedgerSeed is the seed of the checkpoint signing key (dev only).
	LedgerSeed string `json:"ledger_seed"`
}

// DevHMACKey is an orchestrator key: its id and base64 secret.
type DevHMACKey struct {
	KeyID  string `json:"key_id"`
	Secret string `json:"secret"`
}

// DevEdKey is an approver key: its id, identity, and base64 32-byte seed.
type DevEdKey struct {
	KeyID    string `json:"key_id"`
	Approver string `json:"approver"`
	Seed     string `json:"seed"`
	Public   string `json:"public"`
}

// DevConfig configures `writ dev`.
type DevConfig struct {
	DataDir  string
	HTTPAddr string // default 127.0.0.1:7070
	RaftAddr string // default 127.0.0.1:7071
	// ToolsDir holds echo.wasm, which the echo tools' manifests name.
	ToolsDir string
	Base     Config // limits and logger; ID, addresses and mode are set by Dev
	// ReadyLater leaves /v1/health answering 503, and dev.json unwritten,
	// once StartDev returns, until the caller publishes the credentials
	// (PublishDevCredentials) and sets its own check with SetReadyCheck
	// (writ dev does, once its agent is connected). Otherwise the server is
	// ready, and dev.json written, as soon as the dev keys, tools and policy
	// are committed.
	ReadyLater bool
	// ResetPolicy installs the dev policy even when a policy is installed
	// already. Without it the dev policy is installed only when there is
	// none (the first start), so a policy applied with `writ policy apply`
	// survives restarts.
	ResetPolicy bool
}

// StartDev starts a single-server cluster for development: plain HTTP on
// loopback, tenant "dev" with an orchestrator and an approver key, the tools
// echo and echo_approval, and the permissive dev policy. Credentials are
// created on first start and kept in DataDir/dev.json (mode 0600).
func StartDev(ctx context.Context, dc DevConfig) (*Server, *DevCredentials, error) {
	if dc.HTTPAddr == "" {
		dc.HTTPAddr = "127.0.0.1:7070"
	}
	if dc.RaftAddr == "" {
		dc.RaftAddr = "127.0.0.1:7071"
	}
	if err := os.MkdirAll(dc.DataDir, 0o700); err != nil {
		return nil, nil, err
	}
	creds, err := devCredentials(filepath.Join(dc.DataDir, "dev.json"), dc.HTTPAddr)
	if err != nil {
		return nil, nil, err
	}
	cfg := dc.Base
	if cfg.MaxWait == 0 {
		cfg = DefaultConfig()
		cfg.Logger = dc.Base.Logger
	}
	cfg.ID, cfg.DataDir, cfg.HTTPAddr, cfg.RaftAddr = "dev", dc.DataDir, dc.HTTPAddr, dc.RaftAddr
	cfg.Dev, cfg.Bootstrap = true, true
	cfg.AgentAddr = dc.HTTPAddr // node sessions on the same port, over UDP
	sum := sha256.Sum256([]byte(creds.AdminToken))
	cfg.AdminTokenHashes = []string{protocol.FormatHash(sum)}
	seed, err := base64.StdEncoding.DecodeString(creds.LedgerSeed)
	if err != nil {
		return nil, nil, fmt.Errorf("dev.json: ledger_seed: %v", err)
	}
	origin, _, _ := strings.Cut(creds.LedgerKey, "+")
	signer, vkey, err := ledger.NewSigner(origin, seed)
	if err != nil || vkey != creds.LedgerKey {
		return nil, nil, fmt.Errorf("dev.json: ledger_seed does not make ledger_key")
	}
	cfg.LedgerSigner, cfg.LedgerVerifierKey = signer, vkey
	s, err := New(cfg)
	if err != nil {
		return nil, nil, err
	}
	starting := errors.New("writ dev is starting: registering its keys, tools and policy")
	s.SetReadyCheck(func() error { return starting })
	go s.Serve()
	if err := s.WaitLeader(ctx); err != nil {
		s.Close(context.Background())
		return nil, nil, err
	}
	if err := s.registerDev(ctx, creds, dc.ToolsDir, dc.ResetPolicy); err != nil {
		s.Close(context.Background())
		return nil, nil, err
	}
	if dc.ReadyLater {
		s.SetReadyCheck(func() error { return errors.New("writ dev is starting: connecting its agent") })
		return s, creds, nil
	}
	if err := PublishDevCredentials(dc.DataDir); err != nil {
		s.Close(context.Background())
		return nil, nil, err
	}
	s.SetReadyCheck(func() error { return nil })
	return s, creds, nil
}

func (s *Server) registerDev(ctx context.Context, c *DevCredentials, toolsDir string, resetPolicy bool) error {
	secret, _ := base64.StdEncoding.DecodeString(c.Orchestrator.Secret)
	pub, _ := base64.StdEncoding.DecodeString(c.Approver.Public)
	echo := filepath.Join(toolsDir, "echo.wasm")
	ctx = WithActor(ctx, ActorDev)
	admin := adminAPI{s}
	steps := []func() *apiError{
		func() *apiError { return admin.PutTenant(ctx, c.Tenant, 0) },
		func() *apiError {
			// Sealed anew it would be a change on the record at every start.
			if have, ok := (intentKeys{s.reads, s.keys}).IntentKey(c.Tenant, c.Orchestrator.KeyID); ok && bytes.Equal(have, secret) {
				return nil
			}
			return admin.PutIntentKey(ctx, c.Tenant, c.Orchestrator.KeyID, secret)
		},
		func() *apiError {
			return admin.PutApproverKey(ctx, c.Tenant, c.Approver.KeyID, pub, c.Approver.Approver)
		},
		func() *apiError { return admin.PutTool(ctx, devTool("echo", echo, false)) },
		func() *apiError { return admin.PutTool(ctx, devTool("echo_approval", echo, true)) },
	}
	if resetPolicy || s.reads.Policy().Text == "" {
		steps = append(steps, func() *apiError { return admin.PutPolicy(ctx, []byte(policy.DevPolicy)) })
	}
	for _, step := range steps {
		if aerr := step(); aerr != nil {
			return aerr
		}
	}
	return nil
}

func devTool(name, module string, approval bool) []byte {
	return mustMarshal(map[string]any{
		"name":              name,
		"description":       "returns its params as its output",
		"input_schema":      map[string]any{"type": "object"},
		"requires_approval": approval,
		"manifest":          devManifest(name, module),
	})
}

func devManifest(name, module string) map[string]any {
	return map[string]any{"name": name, "tier": "wasm", "module": module}
}

// DevManifests returns the sandbox manifests of the dev tools exactly as
// StartDev registers them, for the allowlist of the agent `writ dev` runs:
// a node owner's allowlist must hold the same manifest the admin registered.
func DevManifests(toolsDir string) map[string][]byte {
	echo := filepath.Join(toolsDir, "echo.wasm")
	return map[string][]byte{
		"echo":          mustMarshal(devManifest("echo", echo)),
		"echo_approval": mustMarshal(devManifest("echo_approval", echo)),
	}
}

// devCredentials reads dev.json, or dev.json.pending (made by a first start
// that has not become ready yet), or creates dev.json.pending with fresh
// keys: dev.json itself appears only once the server is ready
// (PublishDevCredentials), so that a script that waits for it finds a server
// that admits intents.
func devCredentials(path, addr string) (*DevCredentials, error) {
	for _, p := range []string{path, path + pendingSuffix} {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var c DevCredentials
		if err := jsonx.UnmarshalLenient(b, &c); err != nil {
			return nil, fmt.Errorf("%s: %v", p, err)
		}
		if c.Addr != "http://"+addr {
			return nil, fmt.Errorf("%s was written for %s, not http://%s", p, c.Addr, addr)
		}
		return &c, nil
	}
	c, err := newDevCredentials("http://" + addr)
	if err != nil {
		return nil, err
	}
	return c, writeCredentials(path+pendingSuffix, c)
}

const pendingSuffix = ".pending"

// PublishDevCredentials makes DataDir/dev.json appear, once the dev server
// is ready, from the credentials StartDev created; it does nothing when
// dev.json is already there.
func PublishDevCredentials(dataDir string) error {
	path := filepath.Join(dataDir, "dev.json")
	err := os.Rename(path+pendingSuffix, path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(path); serr == nil {
			return nil
		}
	}
	if err != nil {
		return err
	}
	d, err := os.Open(dataDir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// newDevCredentials makes fresh keys for tenant "dev" of a server at addr.
func newDevCredentials(addr string) (*DevCredentials, error) {
	random := func(n int) []byte {
		b := make([]byte, n)
		if _, err := rand.Read(b); err != nil {
			panic(err)
		}
		return b
	}
	seed := random(ed25519.SeedSize)
	ledgerSeed := random(32)
	origin := "localhost/writ-dev/" + hex.EncodeToString(random(4))
	_, vkey, err := ledger.NewSigner(origin, ledgerSeed)
	if err != nil {
		return nil, err
	}
	return &DevCredentials{
		Addr: addr, Tenant: "dev",
		Orchestrator: DevHMACKey{KeyID: "dev-orchestrator", Secret: base64.StdEncoding.EncodeToString(random(32))},
		Approver: DevEdKey{KeyID: "dev-approver", Approver: "dev-approver", Seed: base64.StdEncoding.EncodeToString(seed),
			Public: base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))},
		AdminToken: hex.EncodeToString(random(32)),
		LedgerKey:  vkey, LedgerSeed: base64.StdEncoding.EncodeToString(ledgerSeed),
	}, nil
}

// writeCredentials creates path (mode 0600, secretfile); it never replaces
// a file.
func writeCredentials(path string, c *DevCredentials) error {
	out, _ := jsonx.MarshalIndent(c, "", "  ")
	return secretfile.Create(path, append(out, '\n'))
}

// DevPolicyInstalled reports whether the installed policy is the dev policy
// and returns the installed policy's hash, for writ dev's banner.
func (s *Server) DevPolicyInstalled() (bool, string) {
	p := s.reads.Policy()
	return p.Text == policy.DevPolicy, p.Hash
}
