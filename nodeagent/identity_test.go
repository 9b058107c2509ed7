package nodeagent

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/writhq/writ/internal/secretfile"
)

// TestIdentityRefusesOpenKeys: the agent does not load an identity whose
// private keys group or others can read, and names the file and the fix.
func TestIdentityRefusesOpenKeys(t *testing.T) {
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	tlsKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node-1"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &tlsKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	_, signKey, _ := ed25519.GenerateKey(rand.Reader)
	if _, err := saveIdentity(dir, "node-1", "n1", signKey, tlsKey, [][]byte{leafDER}, ca); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{fileSignKey, fileTLSKey} {
		p := filepath.Join(dir, name)
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s written %v, want 0600", name, fi.Mode().Perm())
		}
		os.Chmod(p, 0o644)
		_, err := LoadIdentity(dir)
		if !errors.Is(err, secretfile.ErrTooOpen) || !strings.Contains(err.Error(), "chmod 600 "+p) {
			t.Errorf("%s 0644: got %v, want a refusal naming chmod 600 %s", name, err, p)
		}
		os.Chmod(p, 0o600)
	}
	if _, err := LoadIdentity(dir); err != nil {
		t.Fatalf("with its keys 0600: %v", err)
	}
}
