package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

// TestOperatorMigrateLog: writ operator migrate-log copies a raft-wal
// directory written by raft-wal v0.4.0, moves it aside, and refuses a second
// time and a directory without one.
func TestOperatorMigrateLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	walDir := filepath.Join(dir, "raft", "wal")
	if err := os.MkdirAll(walDir, 0o700); err != nil {
		t.Fatal(err)
	}
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(walDir, wal.WithMetaStore(meta))
	if err != nil {
		t.Fatal(err)
	}
	var logs []*raft.Log
	for i := uint64(1); i <= 25; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 2, Type: raft.LogCommand, Data: []byte("entry")})
	}
	if err := w.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := w.SetUint64([]byte("CurrentTerm"), 2); err != nil {
		t.Fatal(err)
	}
	w.Close()
	meta.Close()

	out, code := run(t, "", "operator", "migrate-log", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "entries 1 to 25 (25), 1 stable values") {
		t.Fatalf("migrate-log: %q exit %d", out, code)
	}
	if _, err := os.Stat(filepath.Join(dir, "raft", "raft.db")); err != nil {
		t.Fatalf("no raft.db after the migration: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "raft", "wal.migrated", metadb.FileName)); err != nil {
		t.Fatalf("the raft-wal directory was not moved aside: %v", err)
	}
	if out, code := run(t, "", "operator", "migrate-log", "--data-dir", dir); code == 0 {
		t.Fatalf("a second migration: %q exit 0, want a refusal", out)
	}
	if out, code := run(t, "", "operator", "migrate-log", "--data-dir", t.TempDir()); code == 0 {
		t.Fatalf("a directory without a raft-wal log: %q exit 0, want a refusal", out)
	}
}
