package raftnode

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data, and of its metadata only what reading the
// data back needs.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
