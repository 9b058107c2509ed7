package bwrap

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// memfile returns an anonymous in-memory file holding data, positioned at
// its start, for bwrap to read from a descriptor (--seccomp, --ro-bind-data).
func memfile(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("bwrap: memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("bwrap: memfd: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
