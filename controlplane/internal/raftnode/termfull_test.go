//go:build linux

package raftnode

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"
	"golang.org/x/sys/unix"

	"github.com/writhq/writ/internal/testtier"
)

// TestTermOnFullDisk: hashicorp/raft panics when it cannot store a new term.
// With the log store's file system full — the log filled it, then a file
// took what was left — the store still stores terms and votes, before and
// after it is reopened: a commit that small rewrites pages the file holds
// free (those its earlier commits replaced) and needs no new block. The
// appends themselves fail (ENOSPC, which OnLogSpace reports).
func TestTermOnFullDisk(t *testing.T) {
	dir, path := storeOnTmpfs(t, "size=2m")
	s, err := OpenLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	var aerr error
	for i := uint64(1); aerr == nil; i += 8 {
		var logs []*raft.Log
		for j := range uint64(8) {
			logs = append(logs, crashEntry(i+j, 1))
		}
		aerr = s.StoreLogs(logs)
	}
	if !NoSpace(aerr) {
		t.Fatalf("appending until the disk is full: %v, want ENOSPC", aerr)
	}
	fill, err := os.Create(filepath.Join(dir, "fill"))
	for err == nil {
		_, err = fill.Write(make([]byte, 4096))
	}
	fill.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling what is left: %v, want ENOSPC", err)
	}
	setTerms := func(from uint64) {
		t.Helper()
		for term := from; term < from+100; term++ {
			if err := s.SetUint64([]byte("CurrentTerm"), term); err != nil {
				t.Fatalf("term %d on the full disk: %v", term, err)
			}
			if err := s.Set([]byte("LastVoteCand"), []byte("s2")); err != nil {
				t.Fatalf("a vote in term %d on the full disk: %v", term, err)
			}
		}
	}
	setTerms(2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = OpenLogStore(path); err != nil {
		t.Fatalf("reopening the store on the full disk: %v", err)
	}
	if term, err := s.GetUint64([]byte("CurrentTerm")); err != nil || term != 101 {
		t.Fatalf("CurrentTerm after reopening: %d, %v; want 101", term, err)
	}
	setTerms(102)
}

// storeOnTmpfs mounts a tmpfs with opts (root only) for the test's life and
// returns it and the path of a log store in it.
func storeOnTmpfs(t *testing.T, opts string) (dir, path string) {
	t.Helper()
	testtier.Root(t, "a tmpfs to fill")
	dir = t.TempDir()
	if err := unix.Mount("writ-test", dir, "tmpfs", 0, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir, filepath.Join(dir, "raft.db")
}
