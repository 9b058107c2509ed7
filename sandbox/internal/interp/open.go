package interp

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Open resolves path through its symlinks and opens the file that would
// really run. The caller runs that open file (through /proc/self/fd or a
// bind of the descriptor), never the path again, so that what was checked
// is what runs even if the path changes meanwhile.
func Open(path string) (f *os.File, realPath string, err error) {
	realPath, err = filepath.EvalSymlinks(path)
	if err != nil {
		return nil, "", err
	}
	fd, err := syscall.Open(realPath, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, "", fmt.Errorf("open %s: %w", realPath, err)
	}
	f = os.NewFile(uintptr(fd), realPath)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, "", err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Mode&0o111 == 0 {
		f.Close()
		return nil, "", fmt.Errorf("%s is not an executable regular file", realPath)
	}
	return f, realPath, nil
}
