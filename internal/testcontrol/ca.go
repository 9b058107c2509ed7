package testcontrol

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"math/big"
	"net"
	"net/url"
	"time"
)

// authority is the fake's cluster CA. It is built here, not taken from the
// control plane's pki package, so that agent tests never link the control
// plane: a test of the agent against the fake checks the agent against the
// protocol, not against the server's code.
type authority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func newAuthority() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "testcontrol CA"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key}, nil
}

// pin is what a join token pins: the hex SHA-256 of the CA's
// SubjectPublicKeyInfo.
func (a *authority) pin() string {
	sum := sha256.Sum256(a.cert.RawSubjectPublicKeyInfo)
	return hex.EncodeToString(sum[:])
}

// sign certifies pub as writ://role/id, valid from a minute ago for
// validity, for TLS client use and, with server set, server use on
// 127.0.0.1.
func (a *authority) sign(role, id string, pub crypto.PublicKey, server bool, validity time.Duration) ([]byte, error) {
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: role + "/" + id},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(validity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		URIs:        []*url.URL{{Scheme: "writ", Host: role, Path: "/" + id}},
	}
	if server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	return x509.CreateCertificate(rand.Reader, tmpl, a.cert, pub, a.key)
}

// serverCert is the TLS certificate the fake's HTTPS and QUIC listeners
// present: writ://ROLE/ID (a server's role is "server") on 127.0.0.1.
func (a *authority) serverCert(role, id string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	der, err := a.sign(role, id, key.Public(), true, time.Hour)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: key}, nil
}

// signCSR certifies the key of a DER CSR, whose signature must hold, as a
// node's client certificate; it returns the chain, leaf first.
func (a *authority) signCSR(node string, csrDER []byte, validity time.Duration) ([][]byte, error) {
	csr, err := x509.ParseCertificateRequest(csrDER)
	if err != nil {
		return nil, err
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, err
	}
	der, err := a.sign("node", node, csr.PublicKey, false, validity)
	if err != nil {
		return nil, err
	}
	return [][]byte{der, a.cert.Raw}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}
