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

// FuzzParseSyscall: any bytes read from /proc/PID/syscall give a call
// number and first argument, or ok false, never a panic and never a
// negative call number; dead never panics either.
func FuzzParseSyscall(f *testing.F) {
	f.Add("0 0x8 0x7ffd2c1b3a47 0x1 0x0 0x0 0x0 0x7ffd2c1b3a30 0x7f3d5c0d21b2\n")
	f.Add("running\n")
	f.Add("-1 0x7ffc 0x7ffc\n")
	f.Add("63 0xffffffffffffffff")
	f.Add("0 0x")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		nr, _, ok := parseSyscall([]byte(s))
		if ok && nr < 0 {
			t.Fatalf("%q: call %d", s, nr)
		}
		dead([]byte(s))
	})
}

func TestParseSyscall(t *testing.T) {
	for _, c := range []struct {
		in   string
		nr   int64
		arg0 uint64
		ok   bool
	}{
		{"0 0x8 0x7ffd2c1b3a47 0x1 0x0 0x0 0x0 0x7ffd2c1b3a30 0x7f3d5c0d21b2\n", 0, 8, true},
		{"63 0x4 0x1 0x1\n", 63, 4, true},
		{"running\n", 0, 0, false},
		{"-1 0x7ffd2c1b3a30 0x7f3d5c0d21b2\n", 0, 0, false},
		{"0 8 0x1\n", 0, 0, false},
		{"0 0xzz\n", 0, 0, false},
		{"", 0, 0, false},
	} {
		nr, arg0, ok := parseSyscall([]byte(c.in))
		if nr != c.nr || arg0 != c.arg0 || ok != c.ok {
			t.Errorf("%q: got %d, %#x, %v; want %d, %#x, %v", c.in, nr, arg0, ok, c.nr, c.arg0, c.ok)
		}
	}
	for in, want := range map[string]bool{
		"1234 (bwrap) S 1 1234": false, "1234 (a) b) Z 1": true, "1234 (bwrap) X 0": true, "garbage": true,
	} {
		if got := dead([]byte(in)); got != want {
			t.Errorf("dead(%q) = %v, want %v", in, got, want)
		}
	}
}
