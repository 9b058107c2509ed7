// Package testcontrol is a fake control plane for the node agent's tests: a
// cluster CA, the enrollment endpoints over HTTPS (GET /v1/enroll/ca, POST
// /v1/enroll) and the node session over QUIC with mutual TLS (hello,
// welcome, dispatch, result, ack, renew, certificate, bye), as
// docs/protocol.md and PROTOCOL.md describe them. It decides nothing: the
// test drives each session frame by frame and sees every frame the agent
// sends, so the agent's side of the protocol is tested on its own.
package testcontrol

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/writhq/writ/protocol"
)

// Config shapes the fake.
type Config struct {
	// NodeCertValidity is how long the client certificate issued at
	// enrollment stays valid; RenewedCertValidity the one issued on renew.
	NodeCertValidity    time.Duration
	RenewedCertValidity time.Duration
	// Heartbeat is the interval the welcome asks of the agent.
	Heartbeat time.Duration
	// Renew makes sessions answer a renew frame with a certificate.
	Renew bool
	// Misbehaviours an agent must refuse. UncertifiedKey: the welcome's
	// signing key is certified by another CA. ServerRole, if set, is the
	// role the listeners' certificate names instead of "server".
	UncertifiedKey bool
	ServerRole     string
}

// DefaultConfig is a fake whose certificates last an hour, asking for a
// heartbeat every 100 ms (the shortest the agent takes), answering renewals.
func DefaultConfig() Config {
	return Config{NodeCertValidity: time.Hour, RenewedCertValidity: time.Hour, Heartbeat: 100 * time.Millisecond, Renew: true}
}

// Validate reports a config the fake cannot run with.
func (c Config) Validate() error {
	if c.NodeCertValidity <= 0 || c.RenewedCertValidity <= 0 || c.Heartbeat <= 0 {
		return errors.New("testcontrol: validities and heartbeat must be positive")
	}
	return nil
}

// SigningKeyID is the key id of the fake's dispatch-signing key.
const SigningKeyID = "testcontrol-1"

// Control is a running fake control plane; Start makes one and the test's
// cleanup stops it.
type Control struct {
	cfg     Config
	ca      *authority
	http    *httptest.Server
	ln      *quic.Listener
	signKey ed25519.PrivateKey
	keyCert []byte // the signing key's certificate
	tokenID string
	secret  []byte

	mu       sync.Mutex
	enrolls  int // POST /v1/enroll requests seen
	nodes    map[string]protocol.EnrollRequest
	sessions chan *Session
}

// Start runs a fake on loopback ports the kernel chooses.
func Start(t testing.TB, cfg Config) *Control {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ca, err := newAuthority()
	if err != nil {
		t.Fatal(err)
	}
	c := &Control{cfg: cfg, ca: ca, tokenID: "tok1", secret: make([]byte, 32), nodes: map[string]protocol.EnrollRequest{},
		sessions: make(chan *Session, 16)}
	rand.Read(c.secret)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c.signKey = priv
	keyCA := ca
	if cfg.UncertifiedKey {
		if keyCA, err = newAuthority(); err != nil {
			t.Fatal(err)
		}
	}
	if c.keyCert, err = keyCA.sign("server", SigningKeyID, pub, false, time.Hour); err != nil {
		t.Fatal(err)
	}
	role := cfg.ServerRole
	if role == "" {
		role = "server"
	}
	cert, err := ca.serverCert(role, "fake")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/enroll/ca", c.serveCA)
	mux.HandleFunc("POST /v1/enroll", c.serveEnroll)
	c.http = httptest.NewUnstartedServer(mux)
	c.http.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	c.http.StartTLS()
	t.Cleanup(c.http.Close)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	c.ln, err = quic.ListenAddr("127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool,
		NextProtos: []string{protocol.ALPN}, MinVersion: tls.VersionTLS13,
	}, &quic.Config{MaxIdleTimeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.ln.Close() })
	go c.accept()
	return c
}

// Token is a valid join token for this fake: wj1.<id>.<secret>.<ca pin>.
func (c *Control) Token() string {
	return "wj1." + c.tokenID + "." + base64.RawURLEncoding.EncodeToString(c.secret) + "." + c.ca.pin()
}

// EnrollURL is the base URL of the enrollment endpoints (https).
func (c *Control) EnrollURL() string { return c.http.URL }

// Addr is the host:port of the session listener (QUIC, UDP).
func (c *Control) Addr() string { return c.ln.Addr().String() }

// CA is the fake's cluster CA certificate.
func (c *Control) CA() *x509.Certificate { return c.ca.cert }

// SigningKey is the fake's dispatch-signing key, whose certificate every
// welcome carries under SigningKeyID.
func (c *Control) SigningKey() ed25519.PrivateKey { return c.signKey }

// EnrollAttempts is how many POST /v1/enroll requests reached the fake.
func (c *Control) EnrollAttempts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.enrolls
}

// Enrolled returns the enrollment request of node, if the fake enrolled it.
func (c *Control) Enrolled(node string) (protocol.EnrollRequest, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.nodes[node]
	return r, ok
}

// Certify issues node a client certificate for the key of a DER CSR, as
// enrollment and renewal do; it returns the chain, leaf first.
func (c *Control) Certify(node string, csr []byte, validity time.Duration) ([][]byte, error) {
	return c.ca.signCSR(node, csr, validity)
}
