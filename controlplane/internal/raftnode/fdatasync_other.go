//go:build !linux

package raftnode

import "os"

// fdatasync is fsync where the system has no fdatasync. A variable, so that
// a test can make it fail.
var fdatasync = func(f *os.File) error { return f.Sync() }
