package nodeagent

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/writhq/writ/internal/testcontrol"
)

// enroll enrolls a node with the fake into a new directory.
func enroll(t *testing.T, fc *testcontrol.Control) (*Identity, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "node")
	id, err := Enroll(context.Background(), fc.EnrollURL(), fc.Token(), "n1", dir)
	if err != nil {
		t.Fatalf("Enroll: %v", err)
	}
	return id, dir
}

// TestEnroll: enrollment pins the CA of the token, sends the node's own
// Ed25519 key and a CSR for its TLS key, and leaves an identity on disk
// that names the node the server chose, with its certificate, keys 0600,
// and the CA; a second enrollment into the same directory is refused.
func TestEnroll(t *testing.T) {
	t.Parallel()
	fc := testcontrol.Start(t, testcontrol.DefaultConfig())
	id, dir := enroll(t, fc)
	req, ok := fc.Enrolled(id.Node)
	if !ok {
		t.Fatalf("the fake never enrolled %q", id.Node)
	}
	if req.Name != "n1" || req.Token != fc.Token() {
		t.Fatalf("enrollment sent name %q token %q", req.Name, req.Token)
	}
	if !ed25519.PublicKey(req.Public).Equal(id.Key.Public()) {
		t.Fatal("the server got another Ed25519 key than the one kept")
	}
	if !id.CA.Equal(fc.CA()) {
		t.Fatal("the identity holds another CA")
	}
	leaf, err := x509.ParseCertificate(id.TLS.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(leaf.URIs) != 1 || leaf.URIs[0].String() != "writ://node/"+id.Node {
		t.Fatalf("client certificate names %v, want writ://node/%s", leaf.URIs, id.Node)
	}
	loaded, err := LoadIdentity(dir)
	if err != nil {
		t.Fatalf("LoadIdentity: %v", err)
	}
	if loaded.Node != id.Node || loaded.Name != "n1" || !loaded.Key.Equal(id.Key) {
		t.Fatalf("loaded %q %q, want %q n1 and the same key", loaded.Node, loaded.Name, id.Node)
	}
	for _, f := range []string{fileSignKey, fileTLSKey, fileNode} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want mode 0600", f, err)
		}
	}
	if _, err := Enroll(context.Background(), fc.EnrollURL(), fc.Token(), "n1", dir); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Fatalf("second enrollment into %s: %v, want a refusal", dir, err)
	}
	if n := fc.EnrollAttempts(); n != 1 {
		t.Fatalf("%d enrollment requests reached the server, want 1", n)
	}
}

// TestEnrollRefusals: a token that is not one, a server URL that is not
// http(s), a server whose CA is not the pinned one (the secret never
// leaves the node) and a token the server does not know are refused, and
// leave no identity behind.
func TestEnrollRefusals(t *testing.T) {
	t.Parallel()
	fc := testcontrol.Start(t, testcontrol.DefaultConfig())
	other := testcontrol.Start(t, testcontrol.DefaultConfig())
	good := fc.Token()
	parts := strings.Split(good, ".")
	otherPin := strings.Split(other.Token(), ".")[3]
	otherSecret := strings.Split(other.Token(), ".")[2]
	for _, tc := range []struct {
		name, base, token string
		wantErr           error  // or
		wantText          string // in the error
		attempts          int    // enrollment requests the server sees
	}{
		{"not a token", fc.EnrollURL(), "hello", ErrBadToken, "", 0},
		{"short pin", fc.EnrollURL(), strings.Join([]string{"wj1", parts[1], parts[2], "abcd"}, "."), ErrBadToken, "", 0},
		{"ftp server", "ftp://127.0.0.1/", good, nil, "must be an http(s) URL", 0},
		{"another CA pinned", fc.EnrollURL(), strings.Join([]string{"wj1", parts[1], parts[2], otherPin}, "."), nil, "does not match the join token's pin", 0},
		{"unknown secret", fc.EnrollURL(), strings.Join([]string{"wj1", parts[1], otherSecret, parts[3]}, "."), nil, "invalid_token", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fc.EnrollAttempts()
			dir := filepath.Join(t.TempDir(), "node")
			_, err := Enroll(context.Background(), tc.base, tc.token, "n1", dir)
			switch {
			case err == nil:
				t.Fatal("enrolled")
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			case tc.wantText != "" && !strings.Contains(err.Error(), tc.wantText):
				t.Fatalf("err = %v, want it to say %q", err, tc.wantText)
			}
			if got := fc.EnrollAttempts() - before; got != tc.attempts {
				t.Fatalf("%d enrollment requests reached the server, want %d", got, tc.attempts)
			}
			if _, err := LoadIdentity(dir); !errors.Is(err, ErrNotEnrolled) {
				t.Fatalf("LoadIdentity after a refusal: %v, want ErrNotEnrolled", err)
			}
		})
	}
}
