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
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	if advertise == nil {
		advertise = ln.Addr()
	}
	return &tlsStream{Listener: tls.NewListener(ln, srv), advertise: advertise, config: cfg, log: log}, nil
}

// Accept returns the next connection whose peer proved to be a server. Peers
// that fail are closed and logged; Accept keeps waiting, since an error here
// would stop Raft's transport.
func (s *tlsStream) Accept() (net.Conn, error) {
	for {
		c, err := s.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc := c.(*tls.Conn)
		if err := authorize(tc); err != nil {
			s.log.Warn("raft: refused a peer", "remote", c.RemoteAddr().String(), "err", err)
			c.Close()
			continue
		}
		return tc, nil
	}
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

// authorize completes the handshake and requires a server identity.
func authorize(c *tls.Conn) error {
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := c.Handshake(); err != nil {
		return err
	}
	c.SetDeadline(time.Time{})
	certs := c.ConnectionState().PeerCertificates
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
