package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestKeygenForceDoesNotFollowSymlink: writ keygen --force replaces a
// symbolic link planted at the key's name with a new 0600 file, and never
// writes the key through it; without --force an existing name is refused.
func TestKeygenForceDoesNotFollowSymlink(t *testing.T) {
	old := syscall.Umask(0) // the mode must not depend on the umask
	defer syscall.Umask(old)
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "authorized_keys")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "orch.key")
	if err := os.Symlink(victim, key); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, newKeygen, "hmac", "--id", "orch", "--dir", dir); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("keygen over an existing name without --force: %v", err)
	}
	if _, err := runCmd(t, newKeygen, "ed25519", "--id", "orch", "--dir", dir, "--force"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Fatalf("keygen --force wrote through the symlink: %q", b)
	}
	for name, want := range map[string]os.FileMode{"orch.key": 0o600, "orch.pub": 0o644} {
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: got %v, want a regular file %v", name, fi.Mode(), want)
		}
	}
	if _, err := readKeyFile(key); err != nil {
		t.Fatalf("the new key: %v", err)
	}
}

// TestKeygenMakesDir: --dir is made when missing, 0700, and the key is in it.
func TestKeygenMakesDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys", "orch")
	if _, err := runCmd(t, newKeygen, "hmac", "--id", "orch-1", "--dir", dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v, want a 0700 folder", dir, err)
	}
	if _, err := readKeyFile(filepath.Join(dir, "orch-1.key")); err != nil {
		t.Fatalf("the key: %v", err)
	}
}
