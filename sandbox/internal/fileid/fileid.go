// Package fileid identifies one version of one file — device, inode, size,
// modification and change times — so that its content is read and hashed
// once until it changes. The change time cannot be set by a user, so a file
// rewritten in place with a forged modification time still gets a new ID.
package fileid

import (
	"fmt"
	"os"
	"syscall"
)

// ID is one version of one file.
type ID struct {
	Dev, Ino, Size   uint64
	MtimeNS, CtimeNS int64
}

// Of returns the ID of the open regular file f.
func Of(f *os.File) (ID, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return ID{}, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return ID{}, fmt.Errorf("%s is not a regular file", f.Name())
	}
	m, c := times(&st)
	return ID{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: uint64(st.Size), MtimeNS: m, CtimeNS: c}, nil
}
