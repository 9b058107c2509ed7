package controlplane

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"time"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/raftnode"
	"github.com/writhq/writ/internal/freeport"
	"github.com/writhq/writ/protocol"
)

// AdmitEntrySize is the size of the Raft entry that admitting the signed
// intent raw proposes, for a baseline of entries of the same size.
func AdmitEntrySize(raw []byte) (int, error) {
	in, err := protocol.DecodeIntent(raw, 1<<20)
	if err != nil {
		return 0, err
	}
	canon, err := protocol.Canonicalize(raw)
	if err != nil {
		return 0, err
	}
	expires, _ := protocol.ParseTime(in.ExpiresAt)
	b, err := fsm.Encode(fsm.MsgAdmitBinary, &fsm.Admit{
		At: time.Now().UTC(), Intent: canon, ID: in.ID, Tenant: in.Tenant, Principal: in.Principal, RunID: in.RunID,
		Tool: in.Tool, PayloadHash: in.PayloadHash, IdempotencyKey: in.IdempotencyKey, ExpiresAt: expires, Target: in.Target,
		Decision: fsm.Decision{Allow: true, PolicyHash: protocol.HashBytes(nil), Policies: []string{"dev.invoke"}},
	})
	return len(b), err
}

// StartLocalCluster starts n servers (3 or 5) in this process on loopback,
// with a new cluster CA, keyring and checkpoint key in dir, found by each
// other through memberlist (bootstrap_expect n), and registers what writ dev
// registers. It is for `writ bench admit` and `writ bench e2e`: the same
// servers, Raft over mutual TLS and API over TLS as writ server, in one
// process. base sets limits and the logger; when base.AgentAddr is set, each
// server also takes node sessions, over UDP on its API's port number, and
// holds the CA key to enroll nodes. The tools are registered with their
// module in dir/tools/echo.wasm.
func StartLocalCluster(ctx context.Context, dir string, n int, base Config) ([]*Server, *DevCredentials, error) {
	pki := filepath.Join(dir, "pki")
	if err := CreateCA(pki, 24*time.Hour); err != nil {
		return nil, nil, err
	}
	key := make([]byte, 32)
	rand.Read(key)
	if err := writeNew(filepath.Join(dir, "keyring.key"), []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, nil, err
	}
	type ports struct{ api, raft, gossip string }
	var ps []ports
	var join, addrs []string
	for i := 0; i < n; i++ {
		p := ports{freeAddr(), freeAddr(), freeAddr()}
		ps = append(ps, p)
		join = append(join, p.gossip)
		addrs = append(addrs, "https://"+p.api)
	}
	creds, origin, hash, err := ClusterCredentials(filepath.Join(dir, "dev.json"), addrs, filepath.Join(pki, "ca.pem"))
	if err != nil {
		return nil, nil, err
	}
	signer, vkey, err := LedgerKey(origin, filepath.Join(dir, "ledger.key"))
	if err != nil {
		return nil, nil, err
	}
	var servers []*Server
	closeAll := func() {
		for _, s := range servers {
			s.Close(context.Background())
		}
	}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("s%d", i+1)
		if err := IssueServerCert(pki, id, []string{"127.0.0.1"}, 24*time.Hour, pki); err != nil {
			closeAll()
			return nil, nil, err
		}
		cfg := base
		cfg.ID, cfg.DataDir, cfg.HTTPAddr, cfg.RaftAddr = id, filepath.Join(dir, id), ps[i].api, ps[i].raft
		cfg.TLS = TLSFiles{CAFile: filepath.Join(pki, "ca.pem"), CertFile: filepath.Join(pki, id+".pem"), KeyFile: filepath.Join(pki, id+".key")}
		cfg.KeyringFile = filepath.Join(dir, "keyring.key")
		cfg.Cluster = ClusterConfig{GossipAddr: ps[i].gossip, Join: join, BootstrapExpect: n}
		cfg.AdminTokenHashes = []string{hash}
		cfg.LedgerSigner, cfg.LedgerVerifierKey = signer, vkey
		if base.AgentAddr != "" {
			cfg.AgentAddr, cfg.TLS.CAKeyFile = ps[i].api, filepath.Join(pki, "ca.key")
		}
		if cfg.Logger == nil {
			cfg.Logger = slog.Default()
		}
		s, err := New(cfg)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		servers = append(servers, s)
		go s.Serve()
	}
	leader, err := waitClusterLeader(ctx, servers)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	for _, call := range DevAdminCalls(creds, filepath.Join(dir, "tools")) {
		leader.localToken = creds.AdminToken
		if aerr := leader.adminCall(ctx, call); aerr != nil {
			closeAll()
			return nil, nil, aerr
		}
	}
	return servers, creds, nil
}

// waitClusterLeader waits until one of servers leads.
func waitClusterLeader(ctx context.Context, servers []*Server) (*Server, error) {
	for {
		for _, s := range servers {
			if s.isLeader() {
				return s, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, errors.New("controlplane: the local cluster elected no leader")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// adminCall applies one of DevAdminCalls directly (this server leads).
func (s *Server) adminCall(ctx context.Context, c AdminCall) error {
	req := httptest.NewRequestWithContext(ctx, c.Method, "/v1/admin/"+c.Path, bytes.NewReader(c.Body))
	req.Header.Set("Authorization", "Bearer "+s.localToken)
	rec := httptest.NewRecorder()
	s.http.Handler.ServeHTTP(rec, req)
	if rec.Code != 200 {
		return fmt.Errorf("%s /v1/admin/%s: %d %s", c.Method, c.Path, rec.Code, rec.Body.String())
	}
	return nil
}

// IsLeader reports whether this server leads the cluster now.
func (s *Server) IsLeader() bool { return s.isLeader() }

// AddBenchNode records, through Raft on this server (the leader), a ready node
// that may run every registered tool with room for every dispatch, so that
// benchmarked intents are admitted and dispatched as in production rather than
// rejected for want of a node. The node never connects: this measures
// admission, not execution.
func (s *Server) AddBenchNode(ctx context.Context) error {
	tools := map[string]string{}
	for _, t := range s.state.Tools() {
		tools[t.Name] = t.Hash
	}
	at := s.now()
	for _, step := range []struct {
		t   fsm.MsgType
		cmd any
	}{
		{fsm.MsgPutJoinToken, fsm.PutJoinToken{ID: "bench", Hash: "sha256:bench", ExpiresAt: at.Add(time.Hour)}},
		{fsm.MsgEnroll, fsm.Enroll{At: at, TokenID: "bench", TokenHash: "sha256:bench", Node: "bench-node", Name: "bench", Public: make([]byte, 32)}},
		{fsm.MsgNodeSession, fsm.NodeSession{At: at, Node: "bench-node", Server: "no-server", Connected: true,
			Tiers: []string{"wasm"}, Tools: tools, Concurrency: 1 << 30}},
	} {
		res, _, err := s.node.Apply(ctx, step.t, step.cmd)
		if err != nil {
			return err
		}
		if res.Err != nil {
			return fmt.Errorf("controlplane: bench node: %s", res.Err.Message)
		}
	}
	return nil
}

// AppliedIndex is the index of the last entry this server's FSM has applied
// (Raft's own entries never reach it). A benchmark waits for every server to
// reach the leader's, so that no measurement pays for a follower still
// applying the one before.
func (s *Server) AppliedIndex() uint64 { return s.state.Index() }

// GroupStats returns how many entries this server has proposed with group
// commit, and how many commands they carried.
func (s *Server) GroupStats() (entries, commands uint64) { return s.node.GroupStats() }

// ApplyNoop puts one entry that changes nothing, of size bytes, through Raft
// and waits until it is applied here: the raw Raft baseline of benchmarks.
// grouped proposes it as admissions are proposed, grouped with the no-ops
// proposed at the same time into one entry; otherwise it is an entry of its
// own.
func (s *Server) ApplyNoop(ctx context.Context, size int, grouped bool) error {
	apply := s.node.Apply
	if grouped {
		apply = s.node.Propose
	}
	_, _, err := apply(ctx, fsm.MsgNoop, strings.Repeat("x", max(size-3, 0)))
	if errors.Is(err, raftnode.ErrNotLeader) {
		return errors.New("controlplane: not the leader")
	}
	return err
}

// freeAddr is a loopback port free for both TCP and UDP (node sessions use
// the API's port number over UDP), claimed across processes.
func freeAddr() string { return freeport.MustLoopback() }

// ID is the server's id.
func (s *Server) ID() string { return s.cfg.ID }
