package bwrap

import (
	"errors"
	"strconv"
	"strings"
)

// errGone means the sandbox's first process ended before it reached its
// block: bwrap failed in its setup, and its exit says why.
var errGone = errors.New("bwrap: the sandbox ended in its setup")

// parseSyscall reads /proc/PID/syscall: the number of the system call the
// process is blocked in and its first argument. ok is false for a process
// that is running ("running"), not in a call ("-1 ..."), or for anything
// else.
func parseSyscall(b []byte) (nr int64, arg0 uint64, ok bool) {
	f := strings.Fields(string(b))
	if len(f) < 2 || !strings.HasPrefix(f[1], "0x") {
		return 0, 0, false
	}
	nr, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || nr < 0 {
		return 0, 0, false
	}
	arg0, err = strconv.ParseUint(f[1][2:], 16, 64)
	if err != nil {
		return 0, 0, false
	}
	return nr, arg0, true
}

// dead reports whether /proc/PID/stat says the process is a zombie or dead.
func dead(stat []byte) bool {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return true
	}
	switch s[i+2] {
	case 'Z', 'X', 'x':
		return true
	}
	return false
}
