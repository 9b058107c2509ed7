package bwrap

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzReadChildPid: any bytes on --info-fd give a positive pid or an
// error, never a panic, and never a pid with an error.
func FuzzReadChildPid(f *testing.F) {
	f.Add("{\n    \"child-pid\": 1234,\n    \"cgroup-namespace\": 4026532\n}\n")
	f.Add(`{"child-pid": 0}`)
	f.Add(`{"child-pid": -5}`)
	f.Add(`{"child-pid": "7"}`)
	f.Add(``)
	f.Add(`{"child-pid": 12`)
	f.Fuzz(func(t *testing.T, s string) {
		pid, ns, err := readChildPid(strings.NewReader(s))
		if err == nil && pid <= 0 {
			t.Fatalf("pid %d without an error", pid)
		}
		if err != nil && (pid != 0 || ns != 0) {
			t.Fatalf("pid %d, namespace %d with error %v", pid, ns, err)
		}
	})
}

func TestReadChildPid(t *testing.T) {
	for _, c := range []struct {
		in   string
		pid  int
		ns   uint64
		eof  bool
		fail bool
	}{
		{"{\n    \"child-pid\": 1234,\n    \"net-namespace\": 4026532\n}\n", 1234, 0, false, false},
		{"{\n    \"child-pid\": 1234,\n    \"mnt-namespace\": 4026532178\n}\n", 1234, 4026532178, false, false},
		{"", 0, 0, true, false},
		{`{"child-pid": 12`, 0, 0, true, false},
		{`{"child-pid": 0}`, 0, 0, false, true},
		{`{"child-pid": "x"}`, 0, 0, false, true},
		{`{"child-pid": 5, "mnt-namespace": -1}`, 0, 0, false, true},
		{`[1]`, 0, 0, false, true},
	} {
		pid, ns, err := readChildPid(strings.NewReader(c.in))
		if pid != c.pid || ns != c.ns || errors.Is(err, io.EOF) != c.eof || (err != nil && !c.eof) != c.fail {
			t.Errorf("%q: got %d, %d, %v; want %d, %d (eof %v, fail %v)", c.in, pid, ns, err, c.pid, c.ns, c.eof, c.fail)
		}
	}
}
