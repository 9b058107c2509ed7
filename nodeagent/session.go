package nodeagent

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/writhq/writ/nodeagent/internal/store"
	"github.com/writhq/writ/protocol"
)

// ErrRevoked ends the agent: the control plane revoked this node, and no
// server will ever take its sessions again.
var ErrRevoked = errors.New("nodeagent: this node is revoked")

// runner runs dispatches: the Executor.
type runner interface {
	Handle(ctx context.Context, raw []byte, servers protocol.SignerKeys) error
	Cancel(dispatchID string)
	InFlight() int
}

// outbox holds signed results until a server acknowledges them: the store.
type outbox interface {
	Outbox() ([]store.Pending, error)
	Ack(dispatchID string) error
}

// trustedKeys are the dispatch-signing keys of servers, each certified by the
// cluster CA; keys learnt from any server stay trusted for the agent's life.
type trustedKeys struct {
	mu   sync.RWMutex
	keys map[string]ed25519.PublicKey
}

func (t *trustedKeys) SignerKey(id string) (ed25519.PublicKey, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	k, ok := t.keys[id]
	return k, ok
}

// add checks a server key's certificate against the CA: issued to
// writ://server/KEYID, for an Ed25519 key, valid now.
func (t *trustedKeys) add(k protocol.ServerKey, pool *x509.CertPool, now time.Time) error {
	cert, err := x509.ParseCertificate(k.Cert)
	if err != nil {
		return err
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("server key %q: %w", k.KeyID, err)
	}
	if len(cert.URIs) != 1 || cert.URIs[0].String() != "writ://server/"+k.KeyID {
		return fmt.Errorf("server key %q: the certificate names %v", k.KeyID, cert.URIs)
	}
	pub, ok := cert.PublicKey.(ed25519.PublicKey)
	if !ok {
		return fmt.Errorf("server key %q is not Ed25519", k.KeyID)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.keys == nil {
		t.keys = map[string]ed25519.PublicKey{}
	}
	t.keys[k.KeyID] = pub
	return nil
}

// conn is one live session with one server.
type conn struct {
	qc     *quic.Conn
	stream *quic.Stream
	wmu    sync.Mutex
	log    *slog.Logger
}

func (c *conn) write(t string, body any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.stream.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return protocol.WriteFrame(c.stream, t, body)
}

// dial opens a session with one server: QUIC with mutual TLS, the server's
// certificate checked against the pinned CA and required to name a server.
// 0-RTT is never used (DialAddr, not DialAddrEarly). Keep-alives stay under
// 25 s so that NAT mappings stay open.
func (a *Agent) dial(ctx context.Context, addr string) (*conn, error) {
	id := a.identity()
	tlsConf := &tls.Config{
		Certificates: []tls.Certificate{id.TLS},
		RootCAs:      id.Pool,
		NextProtos:   []string{protocol.ALPN},
		MinVersion:   tls.VersionTLS13,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server sent no certificate")
			}
			u := cs.PeerCertificates[0].URIs
			if len(u) != 1 || u[0].Scheme != "writ" || u[0].Host != "server" {
				return errors.New("the peer is not a Writ server")
			}
			return nil
		},
	}
	host, _, err := splitHost(addr)
	if err != nil {
		return nil, err
	}
	tlsConf.ServerName = host
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	qc, err := quic.DialAddr(dctx, addr, tlsConf, &quic.Config{
		HandshakeIdleTimeout: 10 * time.Second,
		MaxIdleTimeout:       60 * time.Second,
		KeepAlivePeriod:      min(a.heartbeat(), 20*time.Second),
	})
	if err != nil {
		return nil, err
	}
	stream, err := qc.OpenStreamSync(dctx)
	if err != nil {
		qc.CloseWithError(0, "")
		return nil, err
	}
	return &conn{qc: qc, stream: stream, log: a.log.With("server_addr", addr)}, nil
}
