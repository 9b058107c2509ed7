package raftnode

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"
)

// failingStore is a log store whose StoreLogs returns err: a fake for the
// exact failure a full disk gives.
type failingStore struct {
	logStore
	err error
}

func (f *failingStore) StoreLogs([]*raft.Log) error { return f.err }

func TestWatchSpace(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		err     error
		reports []bool // what OnLogSpace is told
	}{
		{"stored", nil, []bool{false}},
		{"ENOSPC", fmt.Errorf("write: %w", syscall.ENOSPC), []bool{true}},
		{"EDQUOT", syscall.EDQUOT, []bool{true}},
		{"another error says nothing", errors.New("fsync: input/output error"), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []bool
			w := watchSpace(&failingStore{err: c.err}, func(full bool) { got = append(got, full) })
			if err := w.StoreLog(&raft.Log{Index: 1}); !errors.Is(err, c.err) && err != c.err {
				t.Fatalf("StoreLog = %v, want the store's %v", err, c.err)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.reports) {
				t.Fatalf("OnLogSpace told %v, want %v", got, c.reports)
			}
		})
	}
	if w := watchSpace(&failingStore{}, nil); w == nil {
		t.Fatal("no store")
	} else if _, ok := w.(*spaceWatch); ok {
		t.Fatal("a store is wrapped with nothing to report to")
	}
}
