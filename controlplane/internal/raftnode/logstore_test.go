package raftnode

import (
	"bytes"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func openTestStore(t *testing.T) (*LogStore, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "raft.db")
	s, err := OpenLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func testLog(i uint64) *raft.Log {
	l := &raft.Log{Index: i, Term: i/10 + 1, Type: raft.LogCommand, Data: []byte{byte(i), byte(i >> 8), 7}}
	if i%3 == 0 {
		l.Extensions = []byte("ext")
		l.AppendedAt = time.Unix(1700000000, int64(i)).UTC()
	}
	if i%5 == 0 {
		l.Type, l.Data = raft.LogNoop, nil
	}
	return l
}

func storeRange(t *testing.T, s raft.LogStore, from, to uint64) {
	t.Helper()
	var logs []*raft.Log
	for i := from; i <= to; i++ {
		logs = append(logs, testLog(i))
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
}

// checkLog asserts that s holds exactly first..last, each as testLog made it.
func checkLog(t *testing.T, s raft.LogStore, first, last uint64) {
	t.Helper()
	f, err := s.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	if f != first || l != last {
		t.Fatalf("got first %d last %d, want %d %d", f, l, first, last)
	}
	for _, i := range []uint64{first - 1, last + 1} {
		var got raft.Log
		if err := s.GetLog(i, &got); i > 0 && !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("GetLog(%d) outside the log: got %v, want ErrLogNotFound", i, err)
		}
	}
	for i := first; i <= last && last > 0; i++ {
		var got raft.Log
		if err := s.GetLog(i, &got); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		want := testLog(i)
		if !got.AppendedAt.Equal(want.AppendedAt) {
			t.Fatalf("entry %d appended at %v, want %v", i, got.AppendedAt, want.AppendedAt)
		}
		got.AppendedAt, want.AppendedAt = time.Time{}, time.Time{}
		if !reflect.DeepEqual(&got, want) {
			t.Fatalf("entry %d: got %+v, want %+v", i, got, *want)
		}
	}
}

// TestLogStoreContract runs the LogStore operations Raft relies on: an empty
// log is 0, 0; appends; tail truncation; prefix compaction; a log emptied
// and started again at a later index (after a snapshot install); and
// everything survives a reopen.
func TestLogStoreContract(t *testing.T) {
	t.Parallel()
	s, path := openTestStore(t)
	checkLog(t, s, 0, 0)
	steps := []struct {
		name        string
		do          func() error
		first, last uint64
	}{
		{"append", func() error { storeRange(t, s, 1, 100); return nil }, 1, 100},
		{"append one", func() error { return s.StoreLog(testLog(101)) }, 1, 101},
		{"truncate the tail", func() error { return s.DeleteRange(90, 101) }, 1, 89},
		{"append after truncation", func() error { storeRange(t, s, 90, 120); return nil }, 1, 120},
		{"compact the prefix", func() error { return s.DeleteRange(1, 50) }, 51, 120},
		{"empty range", func() error { return s.DeleteRange(10, 5) }, 51, 120},
		{"delete beyond both ends", func() error { return s.DeleteRange(0, 60) }, 61, 120},
		{"delete all", func() error { return s.DeleteRange(61, 120) }, 0, 0},
		{"start at a later index", func() error { storeRange(t, s, 500, 510); return nil }, 500, 510},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		checkLog(t, s, st.first, st.last)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	checkLog(t, s2, 500, 510)
}

func TestStableStore(t *testing.T) {
	t.Parallel()
	s, path := openTestStore(t)
	if _, err := s.Get([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Fatalf("Get of a key never set: got %v, want an error \"not found\" (Raft checks the text)", err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); v != 0 || err == nil || err.Error() != "not found" {
		t.Fatalf("GetUint64 of a key never set: got %d, %v, want 0, not found", v, err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 42); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("s2")); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("empty"), []byte{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err := OpenLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.GetUint64([]byte("CurrentTerm")); v != 42 || err != nil {
		t.Fatalf("CurrentTerm: got %d, %v, want 42", v, err)
	}
	if v, err := s.Get([]byte("LastVoteCand")); !bytes.Equal(v, []byte("s2")) || err != nil {
		t.Fatalf("LastVoteCand: got %q, %v, want s2", v, err)
	}
	if v, err := s.Get([]byte("empty")); len(v) != 0 || err != nil {
		t.Fatalf("a value set empty: got %q, %v, want empty and no error", v, err)
	}
	if _, err := s.GetUint64([]byte("LastVoteCand")); !errors.Is(err, ErrLogCorrupt) {
		t.Fatalf("GetUint64 of a 2-byte value: got %v, want ErrLogCorrupt", err)
	}
}

// TestLogStoreLocked: a second process (or Start) opening a store in use is
// refused, not left waiting.
func TestLogStoreLocked(t *testing.T) {
	t.Parallel()
	_, path := openTestStore(t)
	start := time.Now()
	if s, err := OpenLogStore(path); err == nil {
		s.Close()
		t.Fatal("a store open elsewhere was opened again")
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("refusing took %v", d)
	}
}

func TestLogCodec(t *testing.T) {
	t.Parallel()
	for i := uint64(1); i < 40; i++ {
		want := testLog(i)
		enc := appendLog(nil, want)
		var got raft.Log
		if err := decodeLog(i, enc, &got); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if !reflect.DeepEqual(appendLog(nil, &got), enc) {
			t.Fatalf("entry %d does not encode back to the same bytes", i)
		}
	}
	good := appendLog(nil, testLog(3))
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"other version", append([]byte{9}, good[1:]...)},
		{"truncated", good[:len(good)-1]},
		{"trailing byte", append(bytes.Clone(good), 0)},
		{"length past the end", []byte{logFormat, 1, 0, 0x7f}},
		{"term not shortest", []byte{logFormat, 0x81, 0x00, 0, 0, 0, 0}},
	} {
		var l raft.Log
		if err := decodeLog(1, c.b, &l); !errors.Is(err, ErrLogCorrupt) {
			t.Errorf("%s: got %v, want ErrLogCorrupt", c.name, err)
		}
	}
}

// TestDeleteRangeAcrossPages: deletions that span many bbolt pages, of
// entries of every size up to several pages, leave nothing of the range.
func TestDeleteRangeAcrossPages(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	var logs []*raft.Log
	for i := uint64(1); i <= 600; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Data: bytes.Repeat([]byte{byte(i)}, int(i*37%9000))})
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]uint64{{1, 250}, {500, 600}, {251, 260}} {
		if err := s.DeleteRange(r[0], r[1]); err != nil {
			t.Fatal(err)
		}
		for i := r[0]; i <= r[1]; i++ {
			var l raft.Log
			if err := s.GetLog(i, &l); !errors.Is(err, raft.ErrLogNotFound) {
				t.Fatalf("after DeleteRange(%d, %d), entry %d: got %v, want ErrLogNotFound", r[0], r[1], i, err)
			}
		}
	}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if first != 261 || last != 499 {
		t.Fatalf("got %d..%d, want 261..499", first, last)
	}
}
