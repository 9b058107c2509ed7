// Package keyring seals orchestrator secrets before they enter the Raft log.
// Every server holds the same 32-byte cluster key in a file of its own (mode
// 0600), never in the log; the log, snapshots and state hold only ciphertext, so
// a copy of a server's Raft data does not reveal a secret.
package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/writhq/writ/internal/secretfile"
)

// KeySize is the size of the cluster key: AES-256.
const KeySize = 32

// ErrOpen is returned when ciphertext does not open: a wrong key, tampering,
// or ciphertext sealed for another tenant or key id.
var ErrOpen = errors.New("keyring: cannot open sealed secret")

// Keyring seals and opens secrets with AES-256-GCM.
type Keyring struct {
	aead cipher.AEAD
	key  []byte
}

// New returns a keyring for a 32-byte key.
func New(key []byte) (*Keyring, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("keyring: key is %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Keyring{aead: aead, key: append([]byte(nil), key...)}, nil
}

// Load reads the key file at path (one line of base64). With create set, a
// missing file is created with a fresh random key, mode 0600.
func Load(path string, create bool) (*Keyring, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && create {
		key := make([]byte, KeySize)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		if err := secretfile.Create(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n")); err != nil {
			return nil, err
		}
		return New(key)
	}
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("keyring: %s is readable by others (mode %v); it must be 0600", path, fi.Mode().Perm())
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("keyring: %s is not base64", path)
	}
	return New(key)
}

// Seal encrypts secret, bound to context (such as tenant and key id) so that
// a sealed secret cannot be moved to another key's record.
func (k *Keyring) Seal(secret []byte, context string) []byte {
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err)
	}
	return k.aead.Seal(nonce, nonce, secret, []byte(context))
}

// Open decrypts what Seal sealed with the same context.
func (k *Keyring) Open(sealed []byte, context string) ([]byte, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n {
		return nil, ErrOpen
	}
	out, err := k.aead.Open(nil, sealed[:n], sealed[n:], []byte(context))
	if err != nil {
		return nil, ErrOpen
	}
	return out, nil
}

// Derive returns n bytes derived from the cluster key for purpose with
// HKDF-SHA256 (RFC 5869). Keys for other uses are derived rather than the
// cluster key being reused, so that no key serves two algorithms; servers with
// the same keyring file derive the same keys.
func (k *Keyring) Derive(purpose string, n int) []byte {
	out, err := hkdf.Key(sha256.New, k.key, nil, "writ/v1/"+purpose, n)
	if err != nil {
		panic(err) // n is a small constant of ours
	}
	return out
}
