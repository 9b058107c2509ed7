package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/writhq/writ/controlplane/internal/pki"
	"github.com/writhq/writ/internal/secretfile"
)

// CreateCA writes a new cluster CA to dir: ca.pem, and ca.key (mode 0600).
// It never replaces an existing CA.
func CreateCA(dir string, validity time.Duration) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, key, err := pki.NewCA("writ cluster CA", time.Now(), validity)
	if err != nil {
		return err
	}
	if err := writeNew(filepath.Join(dir, "ca.key"), key, 0o600); err != nil {
		return err
	}
	return writeNew(filepath.Join(dir, "ca.pem"), ca.PEM, 0o644)
}

// IssueServerCert issues a certificate naming writ://server/ID from the CA in
// caDir, for the given host names and addresses, and writes ID.pem and ID.key
// (mode 0600) to outDir.
func IssueServerCert(caDir, id string, hosts []string, validity time.Duration, outDir string) error {
	certPEM, err := os.ReadFile(filepath.Join(caDir, "ca.pem"))
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(filepath.Join(caDir, "ca.key"))
	if err != nil {
		return err
	}
	ca, err := pki.LoadCA(certPEM, keyPEM)
	if err != nil {
		return err
	}
	if !validID(id) {
		return fmt.Errorf("server id %q must be 1-128 characters of [A-Za-z0-9._:-]", id)
	}
	cert, key, err := ca.Issue(pki.RoleServer, id, hosts, time.Now(), validity)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		return err
	}
	if err := writeNew(filepath.Join(outDir, id+".key"), key, 0o600); err != nil {
		return err
	}
	return writeNew(filepath.Join(outDir, id+".pem"), cert, 0o644)
}

// writeNew creates path with perm (secretfile: never through a symbolic
// link, whole or not at all); it never replaces a file.
func writeNew(path string, b []byte, perm os.FileMode) error {
	return secretfile.CreateMode(path, b, perm)
}
