package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/writhq/writ/internal/secretfile"
	"github.com/writhq/writ/nodeagent/internal/store"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox/tiers"
)

// RunConfig is everything `writ agent` (and the agent inside `writ dev`)
// needs: the configuration file's settings, how to enroll when the data
// directory holds no node yet, and the sandbox tiers' settings.
type RunConfig struct {
	Config
	// Token is the join token, used once when the node is not enrolled.
	Token string
	// Name is the node's name (default: the host name).
	Name string
	// PlainHTTP enrolls over http:// — only for a dev server on loopback.
	PlainHTTP bool
	Tiers     tiers.Config
	Logger    *slog.Logger
	// Ready, if set, is called once the node is enrolled and its tools and
	// tiers are known, before the first session.
	Ready func(node string)
}

// Run enrolls the node if needed, recovers runs a crash interrupted, and
// keeps a session with the control plane until ctx ends or the node is
// revoked (ErrRevoked).
func Run(ctx context.Context, rc RunConfig) error {
	log := rc.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := rc.Config.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(rc.DataDir, 0o700); err != nil {
		return err
	}
	id, err := LoadIdentity(rc.DataDir)
	if errors.Is(err, ErrNotEnrolled) {
		id, err = enrollFirst(ctx, rc, log)
	}
	if err != nil {
		return err
	}
	log = log.With("node", id.Node)
	allow, err := LoadAllowlist(rc.ToolsDir)
	if err != nil {
		return err
	}
	probed := ProbeTiers(rc.Tiers)
	defer probed.Close()
	for tier, why := range probed.Unavailable {
		log.Info("sandbox tier unavailable", "tier", tier, "why", why)
	}
	st, err := store.Open(rc.StorePath())
	if err != nil {
		return err
	}
	defer st.Close()
	v, err := protocol.NewVerifier(protocol.DefaultConfig())
	if err != nil {
		return err
	}
	// Results written before the agent exists (Recover) wait in the outbox
	// for the first session; later ones are sent at once.
	var live atomic.Pointer[Agent]
	x, err := NewExecutor(ExecutorConfig{
		NodeID: id.Node, Key: id.Key, Store: st, Allowlist: allow, Tiers: probed, Verifier: v,
		Concurrency: rc.Concurrency, MaxDiskBytes: rc.MaxDiskBytes, WorkDir: filepath.Join(rc.DataDir, "work"), Env: rc.Env, Logger: log,
		OnResult: func(p store.Pending) {
			if a := live.Load(); a != nil {
				go a.Deliver(p)
			}
		},
	})
	if err != nil {
		return err
	}
	defer x.Close()
	if n, err := x.Recover(); err != nil {
		return err
	} else if n > 0 {
		log.Warn("runs interrupted by a restart reported as unknown; they are never run again", "count", n)
	}
	agent, err := New(Options{Servers: rc.Servers, DataDir: rc.DataDir, Tiers: probed.Available, Tools: allow.Refs(),
		Concurrency: rc.Concurrency, Labels: rc.Labels, Logger: log}, id, x, x)
	if err != nil {
		return err
	}
	live.Store(agent)
	go prune(ctx, x)
	if rc.Ready != nil {
		rc.Ready(id.Node)
	}
	log.Info("agent running", "tiers", probed.Available, "tools", allow.Len(), "servers", rc.Servers)
	return agent.Run(ctx)
}

func enrollFirst(ctx context.Context, rc RunConfig, log *slog.Logger) (*Identity, error) {
	token := rc.Token
	if token == "" && rc.TokenFile != "" {
		if err := secretfile.Check(rc.TokenFile); err != nil {
			return nil, fmt.Errorf("nodeagent: token file: %w", err)
		}
		b, err := os.ReadFile(rc.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("nodeagent: token file: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	if token == "" {
		return nil, ErrNotEnrolled
	}
	name := rc.Name
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, err
		}
		name = h
	}
	scheme := "https://"
	if rc.PlainHTTP {
		host, _, err := net.SplitHostPort(rc.Servers[0])
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return nil, errors.New("nodeagent: plain HTTP enrollment is only for a dev server on loopback")
		}
		scheme = "http://"
	}
	var last error
	for _, s := range rc.Servers {
		id, err := Enroll(ctx, scheme+s, token, name, rc.DataDir)
		if err == nil {
			log.Info("node enrolled", "node", id.Node, "server", s)
			return id, nil
		}
		last = err
	}
	return nil, last
}

// prune forgets, hourly, nonces and journal entries past their retention.
func prune(ctx context.Context, x *Executor) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			x.Prune()
		}
	}
}
