package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/writhq/writ/ledger"
)

// testKey is the checkpoint key of the tamper tests.
func testKey(t testing.TB) (vkey string, publish func(*ledger.Log) []byte) {
	t.Helper()
	s, vkey, err := ledger.NewSigner("writ.test/tamper", make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	publish = func(lg *ledger.Log) []byte {
		signed, err := lg.Publish(s)
		if err != nil {
			t.Fatal(err)
		}
		return signed
	}
	return vkey, publish
}

// buildStore makes a disk store in a new directory with n receipts and a
// checkpoint over all of them, closes it and returns the directory.
func buildStore(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	vkey, publish := testKey(t)
	store := newDiskStore(t, dir)
	l, err := ledger.Open(context.Background(), store, ledger.Config{VerifierKey: vkey})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := l.Append(receipt(i)); err != nil {
			t.Fatal(err)
		}
	}
	publish(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func receipt(i int) []byte {
	return []byte(fmt.Sprintf(`{"index":%d,"intent_id":"int-%04d","outcome":"completed","type":"writ.receipt/v1"}`, i, i))
}

// reopen opens the store in dir as a server would, with tail check tail.
func reopen(t *testing.T, dir string, tail int, full bool) (*ledger.Log, error) {
	t.Helper()
	vkey, _ := testKey(t)
	cfg := ledger.DefaultDiskConfig(dir)
	cfg.Logger = slog.New(slog.DiscardHandler)
	store, err := ledger.OpenDisk(cfg)
	if err != nil {
		return nil, err
	}
	l, err := ledger.Open(context.Background(), store, ledger.Config{VerifierKey: vkey, TailCheck: tail, FullCheck: full})
	if err != nil {
		store.Close()
		return nil, err
	}
	t.Cleanup(func() { l.Close() })
	return l, nil
}

// flip inverts one byte of a file in dir, at offset from its end when negative.
func flip(t *testing.T, dir, name string, at int64) {
	t.Helper()
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if at < 0 {
		at += int64(len(b))
	}
	b[at] ^= 0x01
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, dir, name string, by int64) {
	t.Helper()
	path := filepath.Join(dir, name)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()-by); err != nil {
		t.Fatal(err)
	}
}

func TestTamperDetectedOnOpen(t *testing.T) {
	t.Parallel()
	const n = 100
	leafLen := int64(len(receipt(99))) // the last leaves all have this length
	tests := []struct {
		name   string
		tamper func(t *testing.T, dir string)
		want   error
		say    string // part of the message
	}{
		{"flipped byte in a recent leaf", func(t *testing.T, dir string) { flip(t, dir, "leaves.dat", -leafLen-5) }, ledger.ErrCorrupt, "leaf 98: "},
		{"truncated leaves", func(t *testing.T, dir string) { truncate(t, dir, "leaves.dat", 3) }, ledger.ErrTruncated, "leaves.dat is"},
		{"truncated index", func(t *testing.T, dir string) { truncate(t, dir, "leaves.idx", 8) }, ledger.ErrTruncated, "leaves.idx is"},
		{"truncated hashes", func(t *testing.T, dir string) { truncate(t, dir, "hashes.dat", 32) }, ledger.ErrTruncated, "hashes.dat is"},
		{"missing hashes", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "hashes.dat")) }, ledger.ErrTruncated, "hashes.dat is missing"},
		{"flipped root-path hash", func(t *testing.T, dir string) { flip(t, dir, "hashes.dat", tlog.StoredHashIndex(6, 0)*ledger.HashSize) }, ledger.ErrCheckpointMismatch, "stored tree of size 100 has root"},
		{"tampered checkpoint", func(t *testing.T, dir string) { flip(t, dir, "checkpoint", 22) }, ledger.ErrBadSignature, "bad checkpoint signature"},
		{"head rolled back", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "head"), []byte("writ-ledger-head v1\n0000000000000000060\n"), 0o600)
		}, ledger.ErrCheckpointMismatch, "checkpoint commits to 100 leaves but the store holds 60"},
		{"garbled head", func(t *testing.T, dir string) { os.WriteFile(filepath.Join(dir, "head"), []byte("60\n"), 0o600) }, ledger.ErrCorrupt, "head file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := buildStore(t, n)
			l, err := reopen(t, dir, 16, false)
			if err != nil {
				t.Fatalf("untouched store does not open: %v", err)
			}
			l.Close()
			tt.tamper(t, dir)
			_, err = reopen(t, dir, 16, false)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got error %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.say) {
				t.Errorf("got message %q, want it to say %q", err, tt.say)
			}
		})
	}
}
