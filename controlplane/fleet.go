package controlplane

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/writhq/writ/controlplane/internal/pki"
	"github.com/writhq/writ/protocol"
)

// fleet is what a server needs to deal with node agents: the cluster CA (to
// enroll nodes and renew their certificates), its own dispatch-signing key
// and the CA's certificate for it, and the node sessions it holds.
type fleet struct {
	ca      *pki.CA
	pool    *x509.CertPool
	pin     string // the CA fingerprint join tokens carry
	key     ed25519.PrivateKey
	keyID   string
	keyCert []byte // DER: writ://server/ID for key's public half

	mu       sync.Mutex
	sessions map[string]*session // by node id
}

// newFleet loads the CA key and this server's dispatch key (created on first
// start in DataDir/dispatch.key, mode 0600), and certifies the key with the CA.
func newFleet(cfg Config) (*fleet, error) {
	caPath, caKeyPath := cfg.TLS.CAFile, cfg.TLS.CAKeyFile
	if cfg.Dev {
		dir := filepath.Join(cfg.DataDir, "tls")
		caPath, caKeyPath = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca.key")
	}
	certPEM, err := os.ReadFile(caPath)
	if err != nil {
		return nil, fmt.Errorf("controlplane: cluster CA: %w", err)
	}
	keyPEM, err := os.ReadFile(caKeyPath)
	if err != nil {
		return nil, fmt.Errorf("controlplane: cluster CA key: %w", err)
	}
	ca, err := pki.LoadCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("controlplane: cluster CA: %w", err)
	}
	key, err := loadOrCreateKey(filepath.Join(cfg.DataDir, "dispatch.key"))
	if err != nil {
		return nil, err
	}
	der, err := ca.Sign(pki.RoleServer, cfg.ID, key.Public(), nil, true, time.Now(), 365*24*time.Hour)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &fleet{ca: ca, pool: pool, pin: pki.Fingerprint(ca.Cert), key: key, keyID: cfg.ID, keyCert: der,
		sessions: map[string]*session{}}, nil
}

func loadOrCreateKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		_, key, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, err
		}
		if err := writeNew(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
			return nil, err
		}
		return key, nil
	}
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("controlplane: %s holds no PEM key", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("controlplane: %s: %w", path, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("controlplane: %s is not an Ed25519 key", path)
	}
	return key, nil
}

// agentTLS is the TLS configuration of node sessions: the server's
// certificate, and a client certificate from the cluster CA required before
// the handshake completes.
func (fl *fleet) agentTLS(server tls.Certificate) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{server},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    fl.pool,
		NextProtos:   []string{protocol.ALPN},
		MinVersion:   tls.VersionTLS13,
		// No resumption: every session proves its certificate in a full
		// handshake, and no ticket is kept in each connection's state.
		SessionTicketsDisabled: true,
	}
}

// issueNode certifies a node's TLS key, from a checked certificateRequest,
// for validity.
func (fl *fleet) issueNode(node string, csr *x509.CertificateRequest, validity time.Duration) ([][]byte, error) {
	der, err := fl.ca.Sign(pki.RoleNode, node, csr.PublicKey, nil, true, time.Now(), validity)
	if err != nil {
		return nil, err
	}
	return [][]byte{der, fl.ca.Cert.Raw}, nil
}

func (fl *fleet) session(node string) *session {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return fl.sessions[node]
}

// attach makes s the node's session here, ending an older one.
func (fl *fleet) attach(s *session) {
	fl.mu.Lock()
	old := fl.sessions[s.node]
	fl.sessions[s.node] = s
	fl.mu.Unlock()
	if old != nil {
		old.close("replaced by a newer session")
	}
}

// detach forgets s, unless a newer session replaced it; it reports whether s
// was the node's session.
func (fl *fleet) detach(s *session) bool {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.sessions[s.node] != s {
		return false
	}
	delete(fl.sessions, s.node)
	return true
}

func (fl *fleet) all() []*session {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	out := make([]*session, 0, len(fl.sessions))
	for _, s := range fl.sessions {
		out = append(out, s)
	}
	return out
}

func (fl *fleet) closeAll() {
	for _, s := range fl.all() {
		s.close("server shutting down")
	}
}
