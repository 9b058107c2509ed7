package raftnode

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/raft"
	"github.com/writhq/writ/controlplane/internal/pki"
)

// handshakeTimeout bounds how long an unauthenticated peer can hold a socket.
const handshakeTimeout = 10 * time.Second

// tlsStream is Raft's network layer over mutual TLS. Both ends must present a
// certificate of the cluster CA that names a server (writ://server/ID): an
// agent's certificate of the same CA is refused on Accept and on Dial.
type tlsStream struct {
	net.Listener
	advertise net.Addr
	config    *tls.Config // with Certificates, RootCAs, ClientCAs
	log       *slog.Logger
}

var _ raft.StreamLayer = (*tlsStream)(nil)

func newTLSStream(bind string, advertise net.Addr, cfg *tls.Config, log *slog.Logger) (*tlsStream, error) {
	if cfg == nil || len(cfg.Certificates) == 0 || cfg.RootCAs == nil || cfg.ClientCAs == nil {
		return nil, errors.New("raftnode: TLS needs a certificate, RootCAs and ClientCAs")
	}
	srv := cfg.Clone()
	srv.ClientAuth = tls.RequireAndVerifyClientCert
	srv.MinVersion = tls.VersionTLS13
	// The peer's role is checked during the handshake, which runs in the
	// goroutine that serves the connection: Accept never waits on a peer, so a
	// client that connects and stays silent cannot hold up real servers.
	srv.VerifyConnection = func(cs tls.ConnectionState) error {
		if err := requireServer(cs); err != nil {
			log.Warn("raft: refused a peer", "err", err)
			return err
		}
		return nil
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	if advertise == nil {
		advertise = ln.Addr()
	}
	return &tlsStream{Listener: tls.NewListener(ln, srv), advertise: advertise, config: cfg, log: log}, nil
}

// Accept returns the next connection. Its TLS handshake — which refuses a
// peer without a cluster certificate naming a server — runs on its first read,
// in Raft's goroutine for that connection; until then nothing is served.
func (s *tlsStream) Accept() (net.Conn, error) {
	c, err := s.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	return &handshakeDeadline{Conn: c.(*tls.Conn)}, nil
}

// handshakeDeadline bounds the handshake, then lifts the deadline once the
// peer has proved itself, so that idle Raft connections may stay open.
type handshakeDeadline struct {
	*tls.Conn
	done bool
}

func (h *handshakeDeadline) Read(p []byte) (int, error) {
	if !h.done {
		if err := h.Conn.Handshake(); err != nil {
			return 0, err
		}
		h.done = true
		h.Conn.SetDeadline(time.Time{})
	}
	return h.Conn.Read(p)
}

// Dial connects to a peer server and checks that it is one.
func (s *tlsStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	cfg := s.config.Clone()
	cfg.MinVersion = tls.VersionTLS13
	// Peers are checked by their writ identity below, not by host name.
	cfg.ServerName = "writ-server"
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = verifyServerChain(s.config)
	d := &net.Dialer{Timeout: timeout}
	c, err := tls.DialWithDialer(d, "tcp", string(address), cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (s *tlsStream) Addr() net.Addr { return s.advertise }

// requireServer requires the verified peer certificate to name a server.
func requireServer(cs tls.ConnectionState) error {
	certs := cs.PeerCertificates
	if len(certs) == 0 {
		return errors.New("no client certificate")
	}
	role, _, err := pki.Identity(certs[0])
	if err != nil {
		return err
	}
	if role != pki.RoleServer {
		return fmt.Errorf("certificate names a %s, not a server", role)
	}
	return nil
}

// verifyServerChain verifies the peer's chain against the cluster CA and its
// identity as a server; host names play no part, identities do.
func verifyServerChain(cfg *tls.Config) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("raftnode: peer sent no certificate")
		}
		leaf := cs.PeerCertificates[0]
		inter := x509Pool(cs.PeerCertificates[1:])
		if _, err := leaf.Verify(verifyOptions(cfg, inter)); err != nil {
			return fmt.Errorf("raftnode: peer certificate: %w", err)
		}
		role, _, err := pki.Identity(leaf)
		if err != nil {
			return err
		}
		if role != pki.RoleServer {
			return fmt.Errorf("raftnode: peer is a %s, not a server", role)
		}
		return nil
	}
}
