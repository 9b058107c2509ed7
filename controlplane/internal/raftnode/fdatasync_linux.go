package raftnode

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data, and of its metadata only what reading the
// data back needs. A variable, so that a test can make it fail.
var fdatasync = func(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
