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
		pid, err := readChildPid(strings.NewReader(s))
		if err == nil && pid <= 0 {
			t.Fatalf("pid %d without an error", pid)
		}
		if err != nil && pid != 0 {
			t.Fatalf("pid %d with error %v", pid, err)
		}
	})
}

func TestReadChildPid(t *testing.T) {
	for _, c := range []struct {
		in   string
		pid  int
		eof  bool
		fail bool
	}{
		{"{\n    \"child-pid\": 1234,\n    \"net-namespace\": 4026532\n}\n", 1234, false, false},
		{"", 0, true, false},
		{`{"child-pid": 12`, 0, true, false},
		{`{"child-pid": 0}`, 0, false, true},
		{`{"child-pid": "x"}`, 0, false, true},
		{`[1]`, 0, false, true},
	} {
		pid, err := readChildPid(strings.NewReader(c.in))
		if pid != c.pid || errors.Is(err, io.EOF) != c.eof || (err != nil && !c.eof) != c.fail {
			t.Errorf("%q: got %d, %v; want %d (eof %v, fail %v)", c.in, pid, err, c.pid, c.eof, c.fail)
		}
	}
}
