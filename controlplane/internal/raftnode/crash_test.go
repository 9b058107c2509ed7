package raftnode

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/writhq/writ/internal/testtier"
)

// The crash test: a child process (this test binary, re-executed) appends,
// truncates the tail, compacts the prefix, empties the log to start it again
// at a later index (a snapshot installed) and sets the term, in a random
// loop, on one LogStore; the parent kills it with SIGKILL at a random moment,
// opens the store and checks it against what the child was told was stored.
// Before each operation the child writes what it is about to do on a pipe,
// and "ok" once the call returned: after a kill, the store must hold exactly
// the operations acknowledged, plus, all or nothing, the one in progress.

const crashChildEnv = "WRIT_LOGSTORE_CRASH_CHILD"

// crashKills is how many times TestLogStoreCrash kills its child: 300, or
// 20 under -short.
func crashKills() int { return testtier.Rounds(300, 20) }

// crashEntry is the entry the test writes at index i in term: its data's
// size varies (up to several pages), so that commits split and free pages.
func crashEntry(i, term uint64) *raft.Log {
	n := int((i*7919 + term*104729) % 6000)
	if i%17 == 0 {
		n = 0
	}
	data := bytes.Repeat([]byte{byte(i), byte(term)}, n/2)
	return &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: append([]byte(fmt.Sprintf("%d/%d/", i, term)), data...)}
}

// crashModel is what the store holds, as the parent knows it.
type crashModel struct {
	first, last uint64
	terms       map[uint64]uint64 // index → term of the entry there
	term        uint64            // CurrentTerm in the stable store, 0 for unset
}

// apply applies one operation line: "A from to term", "D from to",
// "S term".
func (m *crashModel) apply(op string) error {
	var a, b, c uint64
	switch {
	case strings.HasPrefix(op, "A "):
		if _, err := fmt.Sscanf(op, "A %d %d %d", &a, &b, &c); err != nil {
			return err
		}
		for i := a; i <= b; i++ {
			m.terms[i] = c
		}
		if m.first == 0 {
			m.first = a
		}
		m.last = b
	case strings.HasPrefix(op, "D "):
		if _, err := fmt.Sscanf(op, "D %d %d", &a, &b); err != nil {
			return err
		}
		for i := a; i <= b; i++ {
			delete(m.terms, i)
		}
		switch {
		case a <= m.first && b >= m.last:
			m.first, m.last = 0, 0
		case a <= m.first:
			m.first = b + 1
		default:
			m.last = a - 1
		}
	case strings.HasPrefix(op, "S "):
		if _, err := fmt.Sscanf(op, "S %d", &a); err != nil {
			return err
		}
		m.term = a
	default:
		return fmt.Errorf("unknown operation %q", op)
	}
	return nil
}

func (m *crashModel) clone() *crashModel {
	c := *m
	c.terms = make(map[uint64]uint64, len(m.terms))
	for k, v := range m.terms {
		c.terms[k] = v
	}
	return &c
}

// matches reports how s differs from m, or nil.
func (m *crashModel) matches(s *LogStore) error {
	first, err := s.FirstIndex()
	if err != nil {
		return err
	}
	last, err := s.LastIndex()
	if err != nil {
		return err
	}
	if first != m.first || last != m.last {
		return fmt.Errorf("log is %d..%d, want %d..%d", first, last, m.first, m.last)
	}
	term, err := s.GetUint64([]byte("CurrentTerm"))
	if err != nil && err.Error() != "not found" {
		return err
	}
	if term != m.term {
		return fmt.Errorf("CurrentTerm is %d, want %d", term, m.term)
	}
	for i := first; i <= last && last > 0; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
		want := crashEntry(i, m.terms[i])
		if l.Term != want.Term || !bytes.Equal(l.Data, want.Data) {
			return fmt.Errorf("entry %d is of term %d, want %d", i, l.Term, want.Term)
		}
	}
	return nil
}

func TestLogStoreCrash(t *testing.T) {
	t.Parallel()
	if os.Getenv(crashChildEnv) != "" {
		crashChild(os.Getenv(crashChildEnv))
		return
	}
	path := filepath.Join(t.TempDir(), "raft.db")
	m := &crashModel{terms: map[uint64]uint64{}}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 16))
	pendingAt := map[string]int{} // the operation in progress at each kill
	start := time.Now()
	kills := crashKills()
	for kill := 0; kill < kills; kill++ {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestLogStoreCrash$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
		cmd.ExtraFiles = []*os.File{w}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		lines := make(chan []string, 1)
		opened := make(chan struct{})
		go func() {
			var got []string
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				if got = append(got, sc.Text()); len(got) == 1 {
					close(opened)
				}
			}
			lines <- got
		}()
		// One kill in ten lands while the child opens the store; the others
		// once it works, a random time into its loop.
		if rng.IntN(10) > 0 {
			select {
			case <-opened:
			case <-time.After(time.Minute):
				t.Fatalf("kill %d: the child did not open the store within a minute", kill)
			}
		}
		time.Sleep(time.Duration(rng.IntN(30_000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("kill %d: the child ended before it was killed: %v", kill, err)
		}
		pending := ""
		got := <-lines // all the child wrote: its end of the pipe closed as it died
		r.Close()
		for _, l := range got {
			switch {
			case l == "ok":
				if err := m.apply(pending); err != nil {
					t.Fatal(err)
				}
				pending = ""
			case strings.HasPrefix(l, "open "):
				// The child's view of the store as it opened it.
				if want := fmt.Sprintf("open %d %d %d", m.first, m.last, m.term); l != want {
					t.Fatalf("kill %d: child opened %q, want %q", kill, l, want)
				}
			default:
				pending = l
			}
		}
		s, err := OpenLogStore(path)
		if err != nil {
			t.Fatalf("kill %d: the store does not open: %v", kill, err)
		}
		err = m.matches(s)
		if err != nil && pending != "" {
			// The operation in progress may have committed.
			with := m.clone()
			if aerr := with.apply(pending); aerr != nil {
				t.Fatal(aerr)
			}
			if werr := with.matches(s); werr == nil {
				m, err = with, nil
			} else {
				err = fmt.Errorf("%v; or with %q: %v", err, pending, werr)
			}
		}
		s.Close()
		if err != nil {
			t.Fatalf("kill %d: %v; the child said %q", kill, err, got)
		}
		kind := "none"
		if pending != "" {
			kind = pending[:1]
		}
		var from, to, term uint64
		if _, err := fmt.Sscanf(pending, "A %d %d %d", &from, &to, &term); err == nil && to-from >= 400 {
			kind = "B" // an append over journalDirect, straight to bbolt
		}
		pendingAt[kind]++
	}
	t.Logf("%d kills in %v; operation in progress at the kill: append %d (and %d over journalDirect), delete %d, set term %d, none (opening or between) %d; log at the end %d..%d",
		kills, time.Since(start).Round(time.Millisecond), pendingAt["A"], pendingAt["B"], pendingAt["D"], pendingAt["S"], pendingAt["none"], m.first, m.last)
	if pendingAt["A"] == 0 || pendingAt["D"] == 0 {
		t.Errorf("no kill landed during an append or a deletion: %v", pendingAt)
	}
}

// crashChild runs operations on the store at path until it is killed,
// telling the parent on file descriptor 3.
func crashChild(path string) {
	out := os.NewFile(3, "ops")
	say := func(format string, a ...any) {
		if _, err := fmt.Fprintf(out, format+"\n", a...); err != nil {
			os.Exit(3)
		}
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(2)
	}
	s, err := OpenLogStore(path)
	if err != nil {
		fail(err)
	}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	term, err := s.GetUint64([]byte("CurrentTerm"))
	if err != nil && err.Error() != "not found" {
		fail(err)
	}
	say("open %d %d %d", first, last, term)
	if term == 0 {
		term = 1
		say("S %d", term)
		if err := s.SetUint64([]byte("CurrentTerm"), term); err != nil {
			fail(err)
		}
		say("ok")
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid())))
	for {
		var op string
		var do func() error
		n := last - first + 1
		if last == 0 {
			n = 0
		}
		switch x := rng.IntN(100); {
		case x < 60 || n < 20: // append a batch: one in ten over journalDirect, straight to bbolt
			from := last + 1
			if last == 0 {
				from = max(first, 1)
			}
			to := from + uint64(rng.IntN(64))
			if rng.IntN(10) == 0 {
				to = from + 400 + uint64(rng.IntN(64)) // about 1.2 MB: more than journalDirect
			}
			var logs []*raft.Log
			for i := from; i <= to; i++ {
				logs = append(logs, crashEntry(i, term))
			}
			op, do = fmt.Sprintf("A %d %d %d", from, to, term), func() error { return s.StoreLogs(logs) }
			if first == 0 {
				first = from
			}
			last = to
		case x < 75: // a new term, then the tail truncated, as a follower does
			term++
			op, do = fmt.Sprintf("S %d", term), func() error { return s.SetUint64([]byte("CurrentTerm"), term) }
			say("%s", op)
			if err := do(); err != nil {
				fail(err)
			}
			say("ok")
			from := last - uint64(rng.IntN(int(min(n-1, 100))))
			to := last
			op, do = fmt.Sprintf("D %d %d", from, to), func() error { return s.DeleteRange(from, to) }
			last = from - 1
		case x < 96: // compaction after a snapshot
			from, to := first, first+uint64(rng.IntN(int(n-10)))
			op, do = fmt.Sprintf("D %d %d", from, to), func() error { return s.DeleteRange(from, to) }
			first = to + 1
		default: // a snapshot installed: the log emptied, restarted later
			from, to := first, last
			op, do = fmt.Sprintf("D %d %d", from, to), func() error { return s.DeleteRange(from, to) }
			first, last = to+100, 0
		}
		say("%s", op)
		if err := do(); err != nil {
			fail(err)
		}
		say("ok")
	}
}
