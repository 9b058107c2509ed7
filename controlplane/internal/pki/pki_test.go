package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newCA(t *testing.T) (*CA, []byte) {
	t.Helper()
	ca, key, err := NewCA("test CA", t0, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca, key
}

func parsePEM(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		t.Fatalf("not a PEM certificate: %q", b)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func verify(ca *CA, leaf *x509.Certificate, at time.Time, usage x509.ExtKeyUsage) error {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

// TestNewCA: the CA is self-signed, a CA that may sign leaves but no
// intermediates, valid from a minute before now (clock skew) to now+validity,
// and its PEM certificate and key load back as the same CA.
func TestNewCA(t *testing.T) {
	t.Parallel()
	ca, keyPEM := newCA(t)
	c := ca.Cert
	if !c.IsCA || !c.BasicConstraintsValid || !c.MaxPathLenZero || c.MaxPathLen != 0 {
		t.Fatalf("IsCA=%v BasicConstraintsValid=%v MaxPathLenZero=%v MaxPathLen=%d, want a CA with path length 0",
			c.IsCA, c.BasicConstraintsValid, c.MaxPathLenZero, c.MaxPathLen)
	}
	if want := x509.KeyUsageCertSign | x509.KeyUsageCRLSign; c.KeyUsage != want {
		t.Fatalf("KeyUsage = %b, want %b", c.KeyUsage, want)
	}
	if c.Subject.CommonName != "test CA" {
		t.Fatalf("CommonName = %q, want %q", c.Subject.CommonName, "test CA")
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Fatalf("not self-signed: %v", err)
	}
	if !c.NotBefore.Equal(t0.Add(-time.Minute)) || !c.NotAfter.Equal(t0.Add(24*time.Hour)) {
		t.Fatalf("valid %v .. %v, want %v .. %v", c.NotBefore, c.NotAfter, t0.Add(-time.Minute), t0.Add(24*time.Hour))
	}
	if got := parsePEM(t, ca.PEM); !got.Equal(c) {
		t.Fatal("CA.PEM is not CA.Cert")
	}
	loaded, err := LoadCA(ca.PEM, keyPEM)
	if err != nil {
		t.Fatalf("LoadCA of NewCA's output: %v", err)
	}
	if !loaded.Cert.Equal(c) {
		t.Fatal("LoadCA returned another certificate")
	}
	// The loaded key is the CA's: what it signs verifies against the original.
	leafPEM, _, err := loaded.Issue(RoleServer, "s1", nil, t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := verify(ca, parsePEM(t, leafPEM), t0, x509.ExtKeyUsageServerAuth); err != nil {
		t.Fatalf("a leaf of the loaded CA does not verify against the original: %v", err)
	}
	other, _ := newCA(t)
	if c.SerialNumber.Cmp(other.Cert.SerialNumber) == 0 {
		t.Fatal("two CAs got the same serial number")
	}
}

// TestLoadCARefuses: a leaf certificate, a key of another CA, and text that
// is no PEM are refused.
func TestLoadCARefuses(t *testing.T) {
	t.Parallel()
	ca, keyPEM := newCA(t)
	other, otherKey := newCA(t)
	leafPEM, leafKey, err := ca.Issue(RoleNode, "n1", nil, t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		cert, key []byte
	}{
		{"leaf certificate", leafPEM, leafKey},
		{"key of another CA", ca.PEM, otherKey},
		{"certificate of another CA", other.PEM, keyPEM},
		{"no PEM", []byte("not a certificate"), []byte("not a key")},
		{"empty", nil, nil},
		{"key as certificate", keyPEM, keyPEM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got, err := LoadCA(tc.cert, tc.key); err == nil {
				t.Fatalf("LoadCA accepted it: %v", got.Cert.Subject)
			}
		})
	}
}

// TestIssue: a certificate from Issue is a leaf of the CA, for TLS server
// and client use, names role/id in its URI (and so to Identity), carries
// the hosts as IP addresses or DNS names, comes with its own private key,
// and verifies only inside its validity.
func TestIssue(t *testing.T) {
	t.Parallel()
	ca, _ := newCA(t)
	certPEM, keyPEM, err := ca.Issue(RoleServer, "s1", []string{"127.0.0.1", "::1", "writ.example", "10.0.0.7"}, t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("certificate and key do not match: %v", err)
	}
	if _, ok := pair.PrivateKey.(*ecdsa.PrivateKey); !ok {
		t.Fatalf("key is %T, want ECDSA", pair.PrivateKey)
	}
	c := parsePEM(t, certPEM)
	if c.IsCA {
		t.Fatal("a leaf is a CA")
	}
	if c.KeyUsage != x509.KeyUsageDigitalSignature {
		t.Fatalf("KeyUsage = %b, want digital signature only", c.KeyUsage)
	}
	if c.Subject.CommonName != "server/s1" {
		t.Fatalf("CommonName = %q, want server/s1", c.Subject.CommonName)
	}
	role, id, err := Identity(c)
	if err != nil || role != RoleServer || id != "s1" {
		t.Fatalf("Identity = %q, %q, %v; want server, s1", role, id, err)
	}
	var ips []string
	for _, ip := range c.IPAddresses {
		ips = append(ips, ip.String())
	}
	if want := []string{"127.0.0.1", "::1", "10.0.0.7"}; !slices.Equal(ips, want) {
		t.Fatalf("IPAddresses = %v, want %v", ips, want)
	}
	if want := []string{"writ.example"}; !slices.Equal(c.DNSNames, want) {
		t.Fatalf("DNSNames = %v, want %v", c.DNSNames, want)
	}
	if err := c.VerifyHostname("10.0.0.7"); err != nil {
		t.Fatal(err)
	}
	if err := c.VerifyHostname("other.example"); err == nil {
		t.Fatal("VerifyHostname accepted a host the certificate does not name")
	}
	for _, tc := range []struct {
		name  string
		at    time.Time
		usage x509.ExtKeyUsage
		ok    bool
	}{
		{"server auth now", t0, x509.ExtKeyUsageServerAuth, true},
		{"client auth now", t0, x509.ExtKeyUsageClientAuth, true},
		{"a minute of skew", t0.Add(-59 * time.Second), x509.ExtKeyUsageServerAuth, true},
		{"last second", t0.Add(time.Hour - time.Second), x509.ExtKeyUsageClientAuth, true},
		{"before", t0.Add(-2 * time.Minute), x509.ExtKeyUsageServerAuth, false},
		{"expired", t0.Add(time.Hour + time.Second), x509.ExtKeyUsageClientAuth, false},
		{"code signing", t0, x509.ExtKeyUsageCodeSigning, false},
	} {
		err := verify(ca, c, tc.at, tc.usage)
		if (err == nil) != tc.ok {
			t.Errorf("%s: verify err = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	other, _ := newCA(t)
	if err := verify(other, c, t0, x509.ExtKeyUsageServerAuth); err == nil {
		t.Fatal("a leaf verified against another CA")
	}
	again, _, err := ca.Issue(RoleServer, "s1", nil, t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if parsePEM(t, again).SerialNumber.Cmp(c.SerialNumber) == 0 {
		t.Fatal("two certificates got the same serial number")
	}
}

// TestSign: Sign certifies a public key held elsewhere (ECDSA from a node's
// CSR, Ed25519 for a server's dispatch key); a client certificate cannot
// serve TLS, a server one can do both.
func TestSign(t *testing.T) {
	t.Parallel()
	ca, _ := newCA(t)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		role, id   string
		pub        any
		hosts      []string
		client     bool
		wantServer bool
	}{
		{"node client", RoleNode, "n-1", ec.Public(), nil, true, false},
		{"server", RoleServer, "s2", ec.Public(), []string{"127.0.0.2", "s2.example"}, false, true},
		{"ed25519 server key", RoleServer, "s3", edPub, nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			der, err := ca.Sign(tc.role, tc.id, tc.pub, tc.hosts, tc.client, t0, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			c, err := x509.ParseCertificate(der)
			if err != nil {
				t.Fatal(err)
			}
			if !publicKeyEqual(c.PublicKey, tc.pub) {
				t.Fatal("the certificate carries another public key")
			}
			role, id, err := Identity(c)
			if err != nil || role != tc.role || id != tc.id {
				t.Fatalf("Identity = %q, %q, %v; want %q, %q", role, id, err, tc.role, tc.id)
			}
			if err := verify(ca, c, t0, x509.ExtKeyUsageClientAuth); err != nil {
				t.Fatalf("client auth: %v", err)
			}
			if err := verify(ca, c, t0, x509.ExtKeyUsageServerAuth); (err == nil) != tc.wantServer {
				t.Fatalf("server auth err = %v, want ok=%v", err, tc.wantServer)
			}
			if err := verify(ca, c, t0.Add(time.Hour+time.Second), x509.ExtKeyUsageClientAuth); err == nil {
				t.Fatal("verified after its validity")
			}
			if len(tc.hosts) > 0 {
				for _, h := range tc.hosts {
					if err := c.VerifyHostname(h); err != nil {
						t.Fatalf("host %s: %v", h, err)
					}
				}
			}
		})
	}
}

func publicKeyEqual(a, b any) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	e, ok := a.(equaler)
	return ok && e.Equal(b)
}

// TestLeafCannotSign: the CA's path length is zero, so a certificate signed
// by a leaf's key (a server or agent minting certificates) never verifies,
// even one claiming to be a CA.
func TestLeafCannotSign(t *testing.T) {
	t.Parallel()
	ca, _ := newCA(t)
	leafPEM, leafKeyPEM, err := ca.Issue(RoleServer, "s1", nil, t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(leafPEM, leafKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf := parsePEM(t, leafPEM)
	sub, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7),
		Subject:      pkix.Name{CommonName: "node/forged"},
		NotBefore:    t0.Add(-time.Minute),
		NotAfter:     t0.Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		URIs:         []*url.URL{IdentityURI(RoleNode, "forged")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, leaf, sub.Public(), pair.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	forged, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	inter := x509.NewCertPool()
	inter.AddCert(leaf)
	if _, err := forged.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, CurrentTime: t0,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Fatal("a certificate signed by a leaf verified")
	}
}

// TestIdentity: Identity accepts exactly one writ://role/id URI with a
// non-empty role and a non-empty id without '/', and round-trips
// IdentityURI.
func TestIdentity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		uris     []string
		role, id string // empty: refused
	}{
		{"server", []string{"writ://server/s1"}, "server", "s1"},
		{"node", []string{"writ://node/n-7.a"}, "node", "n-7.a"},
		{"none", nil, "", ""},
		{"two", []string{"writ://server/s1", "writ://node/n1"}, "", ""},
		{"other scheme", []string{"spiffe://server/s1"}, "", ""},
		{"no role", []string{"writ:///s1"}, "", ""},
		{"no id", []string{"writ://server/"}, "", ""},
		{"no path", []string{"writ://server"}, "", ""},
		{"nested id", []string{"writ://server/a/b"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &x509.Certificate{}
			for _, s := range tc.uris {
				u, err := url.Parse(s)
				if err != nil {
					t.Fatal(err)
				}
				c.URIs = append(c.URIs, u)
			}
			role, id, err := Identity(c)
			if tc.role == "" {
				if err == nil {
					t.Fatalf("Identity accepted %v as %q, %q", tc.uris, role, id)
				}
				return
			}
			if err != nil || role != tc.role || id != tc.id {
				t.Fatalf("Identity = %q, %q, %v; want %q, %q", role, id, err, tc.role, tc.id)
			}
			if got := IdentityURI(role, id).String(); got != tc.uris[0] {
				t.Fatalf("IdentityURI = %q, want %q", got, tc.uris[0])
			}
		})
	}
}

// TestFingerprint: the pin is sha256: and the hex SHA-256 of the CA's
// SubjectPublicKeyInfo; it survives a reload and differs between CAs.
func TestFingerprint(t *testing.T) {
	t.Parallel()
	ca, keyPEM := newCA(t)
	sum := sha256.Sum256(ca.Cert.RawSubjectPublicKeyInfo)
	want := "sha256:" + hex.EncodeToString(sum[:])
	got := Fingerprint(ca.Cert)
	if got != want {
		t.Fatalf("Fingerprint = %q, want %q", got, want)
	}
	if len(got) != len("sha256:")+64 || !strings.HasPrefix(got, "sha256:") {
		t.Fatalf("Fingerprint %q is not sha256: and 64 hex digits", got)
	}
	loaded, err := LoadCA(ca.PEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if Fingerprint(loaded.Cert) != got {
		t.Fatal("the fingerprint changed across LoadCA")
	}
	other, _ := newCA(t)
	if Fingerprint(other.Cert) == got {
		t.Fatal("two CAs share a fingerprint")
	}
}
