package keyring

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestSealOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keyring")
	k, err := Load(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	sealed := k.Seal([]byte("the secret"), "acme/orch-1")
	if bytes.Contains(sealed, []byte("the secret")) {
		t.Fatal("sealed text contains the secret")
	}
	got, err := k.Open(sealed, "acme/orch-1")
	if err != nil || string(got) != "the secret" {
		t.Fatalf("Open: %q, %v", got, err)
	}
	if _, err := k.Open(sealed, "globex/orch-1"); err != ErrOpen {
		t.Errorf("opened under another context: %v", err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := k.Open(sealed, "acme/orch-1"); err != ErrOpen {
		t.Errorf("opened tampered ciphertext: %v", err)
	}
	again, err := Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := again.Open(k.Seal([]byte("x"), "c"), "c"); err != nil || string(got) != "x" {
		t.Errorf("reloaded keyring: %q %v", got, err)
	}
	os.Chmod(path, 0o644)
	if _, err := Load(path, false); err == nil {
		t.Error("loaded a key file readable by others")
	}
	if _, err := Load(filepath.Join(dir, "missing"), false); err == nil {
		t.Error("loaded a missing key file without create")
	}
}
