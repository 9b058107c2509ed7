package controlplane_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/controlplane/internal/pki"
	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/protocol"
)

// servedStream dials with tlsConf and reports whether the server ever answered a
// hello: it must not, for a client without a valid node certificate.
func servedStream(t *testing.T, addr, node string, tlsConf *tls.Config) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := quic.DialAddr(ctx, addr, tlsConf, &quic.Config{})
	if err != nil {
		return false
	}
	defer conn.CloseWithError(0, "")
	stream, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return false
	}
	protocol.WriteFrame(stream, protocol.FrameHello, protocol.Hello{Node: node, Concurrency: 1, Tiers: []string{"wasm"}})
	stream.SetReadDeadline(time.Now().Add(3 * time.Second))
	f, err := protocol.ReadFrame(stream)
	return err == nil && f.Type == protocol.FrameWelcome
}

// TestSessionNeedsANodeCertificate: no certificate, one from another CA, or
// a server's certificate: the connection is closed before any stream is
// served. A session that is served proves the test can tell.
func TestSessionNeedsANodeCertificate(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	pool := d.node.CAPool()
	base := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{protocol.ALPN}, MinVersion: tls.VersionTLS13}
	if servedStream(t, d.s.AgentAddr(), d.node.ID, base) {
		t.Error("a client without a certificate was served")
	}
	other, _, err := pki.NewCA("another CA", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := other.Sign(pki.RoleNode, d.node.ID, key.Public(), nil, true, time.Now(), time.Hour)
	foreign := base.Clone()
	foreign.Certificates = []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}
	if servedStream(t, d.s.AgentAddr(), d.node.ID, foreign) {
		t.Error("a certificate from another CA, naming an enrolled node, was served")
	}
	mine := base.Clone()
	mine.Certificates = []tls.Certificate{d.node.Certificate()}
	if !servedStream(t, d.s.AgentAddr(), d.node.ID, mine) {
		t.Error("the enrolled node's own certificate was not served: the test cannot tell")
	}
}

// TestUnknownNodeMayRetry: a node certificate of the cluster CA for a node
// this server has no record of — it has not applied the enrollment yet: it is
// restarting, or lags the log — is closed with the "unknown, try again" code,
// never the revoked one, which makes an agent stop for good. (It once was:
// agents exited when a restarted cluster's servers had not replayed their
// logs yet.)
func TestUnknownNodeMayRetry(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	certPEM, err1 := os.ReadFile(filepath.Join(d.dir, "tls", "ca.pem"))
	keyPEM, err2 := os.ReadFile(filepath.Join(d.dir, "tls", "ca.key"))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	ca, err := pki.LoadCA(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := ca.Sign(pki.RoleNode, "node-enrolled-elsewhere", key.Public(), nil, true, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	conf := &tls.Config{RootCAs: d.node.CAPool(), ServerName: "127.0.0.1", NextProtos: []string{protocol.ALPN}, MinVersion: tls.VersionTLS13,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der, ca.Cert.Raw}, PrivateKey: key}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := quic.DialAddr(ctx, d.s.AgentAddr(), conf, &quic.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseWithError(0, "")
	<-conn.Context().Done()
	var app *quic.ApplicationError
	if err := context.Cause(conn.Context()); !errors.As(err, &app) || app.ErrorCode != 4 {
		t.Fatalf("a node this server does not know: the session ended with %v, want application error 4 (unknown: retry)", err)
	}
}

// TestRevokedNodeIsDisconnected: revocation closes the node's session at
// once, and a new connection with its still-valid certificate is refused.
func TestRevokedNodeIsDisconnected(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	if err := d.admin.NodeAction(context.Background(), d.node.ID, "revoke"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.node.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the revoked node's session stayed open")
	}
	mine := &tls.Config{RootCAs: d.node.CAPool(), ServerName: "127.0.0.1", NextProtos: []string{protocol.ALPN}, MinVersion: tls.VersionTLS13,
		Certificates: []tls.Certificate{d.node.Certificate()}}
	if servedStream(t, d.s.AgentAddr(), d.node.ID, mine) {
		t.Error("a revoked node was served again")
	}
}

// TestSilentNodeThenLateResult: a node that runs a dispatch and goes silent
// past its deadline leaves the intent unknown; its late result is recorded
// as a superseding receipt, and the unknown one stays.
func TestSilentNodeThenLateResult(t *testing.T) {
	t.Parallel()
	d := startDevWith(t, func(c *controlplane.Config) { c.FSM.DispatchTTL, c.FSM.DispatchGrace = time.Second, time.Second })
	ctx := context.Background()
	// A tool with a 100 ms timeout, so that the deadline comes soon; the
	// node reconnects to allow it.
	if err := d.admin.Admin(ctx, "PUT", "tools", []byte(`{"name":"quick","manifest":{"name":"quick","tier":"wasm","module":"/x.wasm","limits":{"timeout_ms":100}}}`)); err != nil {
		t.Fatal(err)
	}
	d.node.close()
	if err := d.node.connect(t, d.s.AgentAddr(), toolHashes(t, "http://"+d.s.Addr().String())); err != nil {
		t.Fatal(err)
	}
	waitReady(t, d.s, d.node.ID)
	d.node.Hold.Store(true)
	r, err := d.c.Submit(ctx, d.intent(t, "quick", `{"msg":"late"}`), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.c.Intent(ctx, r.IntentID, 10*time.Second)
	if err != nil || got.State != "unknown" || got.Error == nil || got.Error.Code != "node_silent" || got.ReceiptIndex == nil {
		t.Fatalf("silent node: %+v %v", got, err)
	}
	d.node.Hold.Store(false)
	d.node.Release()
	eventually.NoError(t, "the late result to supersede", func() error {
		got, err = d.c.Intent(ctx, r.IntentID, 0)
		if err == nil && got.SupersededBy == nil {
			return fmt.Errorf("intent %+v", got)
		}
		return err
	})
	if got.State != "unknown" || *got.SupersededBy <= *got.ReceiptIndex {
		t.Fatalf("after the late result: %+v", got)
	}
}

// TestTargetedIntentsRunOnTheirNode: an intent naming a node by id or by
// name runs there and nowhere else, with two nodes ready; one naming no
// enrolled node is rejected no_eligible_node at once.
func TestTargetedIntentsRunOnTheirNode(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	base := "http://" + d.s.Addr().String()
	other := enrollSim(t, d.s, base)
	if err := other.connect(t, d.s.AgentAddr(), toolHashes(t, base)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.close)
	waitReady(t, d.s, other.ID)
	for i, target := range []*protocol.Target{{Node: other.ID}, {Node: d.node.ID}, {Node: other.ID}} {
		raw := d.intent(t, "echo", `{"msg":"targeted"}`, func(in *protocol.Intent) { in.Target = target })
		r, err := d.c.Submit(ctx, raw, nil, 10*time.Second)
		if err != nil || r.State != "completed" {
			t.Fatalf("intent %d targeted at %s: %+v %v", i, target.Node, r, err)
		}
	}
	if o, n := other.Runs.Load(), d.node.Runs.Load(); o != 2 || n != 1 {
		t.Fatalf("runs: %d on the node targeted twice, %d on the one targeted once", o, n)
	}
	raw := d.intent(t, "echo", `{"msg":"nowhere"}`, func(in *protocol.Intent) { in.Target = &protocol.Target{Node: "no-such-node"} })
	r, err := d.c.Submit(ctx, raw, nil, 10*time.Second)
	if err != nil || r.State != "rejected" || r.Error == nil || r.Error.Code != "no_eligible_node" {
		t.Fatalf("an intent for no enrolled node: %+v %v", r, err)
	}
}
