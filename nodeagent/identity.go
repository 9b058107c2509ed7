package nodeagent

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/internal/secretfile"
)

// Identity is what enrollment leaves in the data directory: the node's id,
// its Ed25519 result-signing key, its TLS key and client certificate chain,
// and the cluster CA it pinned. Private keys are generated here and never
// leave the node.
type Identity struct {
	Node string
	Name string
	Key  ed25519.PrivateKey
	TLS  tls.Certificate
	CA   *x509.Certificate
	Pool *x509.CertPool
}

// The files of an identity, in the data directory (mode 0700).
const (
	fileNode    = "node.json" // {"node": id, "name": name}
	fileSignKey = "node.key"  // Ed25519, PKCS#8 PEM, 0600
	fileTLSKey  = "tls.key"   // ECDSA P-256, PKCS#8 PEM, 0600
	fileTLSCert = "tls.pem"   // the client certificate chain
	fileCA      = "ca.pem"    // the pinned cluster CA
)

// ErrNotEnrolled is returned by LoadIdentity for a data directory without one.
var ErrNotEnrolled = errors.New("nodeagent: this data directory holds no enrolled node; enroll with --token")

// LoadIdentity reads an enrolled node's identity from dir.
func LoadIdentity(dir string) (*Identity, error) {
	b, err := os.ReadFile(filepath.Join(dir, fileNode))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotEnrolled
	}
	if err != nil {
		return nil, err
	}
	// The keys sign results and authenticate the node: refuse them, as ssh
	// does, when others can read them.
	for _, name := range []string{fileSignKey, fileTLSKey} {
		if err := secretfile.Check(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("nodeagent: %w", err)
		}
	}
	var meta struct {
		Node string `json:"node"`
		Name string `json:"name"`
	}
	if err := jsonx.UnmarshalLenient(b, &meta); err != nil || meta.Node == "" {
		return nil, fmt.Errorf("nodeagent: %s is unreadable", fileNode)
	}
	signKey, err := readKey(filepath.Join(dir, fileSignKey))
	if err != nil {
		return nil, err
	}
	ed, ok := signKey.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("nodeagent: %s is not an Ed25519 key", fileSignKey)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, fileTLSCert), filepath.Join(dir, fileTLSKey))
	if err != nil {
		return nil, fmt.Errorf("nodeagent: client certificate: %w", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, fileCA))
	if err != nil {
		return nil, err
	}
	ca, err := parseCertPEM(caPEM)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &Identity{Node: meta.Node, Name: meta.Name, Key: ed, TLS: cert, CA: ca, Pool: pool}, nil
}

// CertExpiry is when the client certificate stops being valid.
func (id *Identity) CertExpiry() (time.Time, time.Time) {
	leaf, err := x509.ParseCertificate(id.TLS.Certificate[0])
	if err != nil {
		return time.Time{}, time.Time{}
	}
	return leaf.NotBefore, leaf.NotAfter
}

// newTLSKey makes a TLS key and a certificate request for it.
func newTLSKey(node string) (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	return key, csr, err
}

// saveCert replaces the TLS key and certificate chain, each written to a
// temporary file and renamed, so that a crash leaves the old pair or the new.
func saveCert(dir string, key *ecdsa.PrivateKey, chain [][]byte) (tls.Certificate, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return tls.Certificate{}, err
	}
	var certPEM []byte
	for _, c := range chain {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c})...)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	// The key first: a certificate never names a key that is not on disk.
	if err := writeAtomic(filepath.Join(dir, fileTLSKey+".next"), keyPEM, 0o600); err != nil {
		return tls.Certificate{}, err
	}
	if err := writeAtomic(filepath.Join(dir, fileTLSCert+".next"), certPEM, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	if err := os.Rename(filepath.Join(dir, fileTLSKey+".next"), filepath.Join(dir, fileTLSKey)); err != nil {
		return tls.Certificate{}, err
	}
	return pair, os.Rename(filepath.Join(dir, fileTLSCert+".next"), filepath.Join(dir, fileTLSCert))
}

// writeAtomic writes a file of the identity whole or not at all, never
// through a symbolic link, owned by the agent (secretfile).
func writeAtomic(path string, b []byte, perm os.FileMode) error {
	return secretfile.WriteMode(path, b, perm)
}

func readKey(path string) (any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("nodeagent: %s holds no PEM key", filepath.Base(path))
	}
	return x509.ParsePKCS8PrivateKey(block.Bytes)
}

func parseCertPEM(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("nodeagent: no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}
