package interp

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/writhq/writ/sandbox/internal/fileid"
)

// DefaultDirs are where a host keeps the interpreters it may have.
var DefaultDirs = []string{"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin",
	"/usr/local/sbin", "/usr/libexec", "/lib64", "/lib", "/usr/lib/x86_64-linux-gnu",
	"/usr/lib/aarch64-linux-gnu", "/opt/homebrew/bin", "/usr/games"}

// ErrDenied is wrapped by every denial of Check.
var ErrDenied = errors.New("interpreter denied")

// Detector knows the content hashes of the interpreters found on the host.
// It is safe for concurrent use; the host is scanned once, on first use.
type Detector struct {
	dirs []string

	once      sync.Once
	known     map[[32]byte]string // content hash → name of an interpreter
	multiCall map[[32]byte]bool   // content hash → busybox-like

	mu    sync.Mutex
	cache map[fileid.ID][32]byte
}

// NewDetector returns a Detector scanning dirs (DefaultDirs when nil).
func NewDetector(dirs []string) *Detector {
	if dirs == nil {
		dirs = DefaultDirs
	}
	return &Detector{dirs: dirs, cache: map[fileid.ID][32]byte{}}
}

func (d *Detector) scan() {
	d.known = map[[32]byte]string{}
	d.multiCall = map[[32]byte]bool{}
	for _, dir := range d.dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if !Denied(name) {
				continue
			}
			f, err := os.Open(filepath.Join(dir, name))
			if err != nil {
				continue
			}
			sum, err := d.hash(f)
			f.Close()
			if err != nil {
				continue
			}
			if _, ok := d.known[sum]; !ok {
				d.known[sum] = name
			}
			if multiCall[name] {
				d.multiCall[sum] = true
			}
		}
	}
}

// hash returns the SHA-256 of an open regular file, cached by identity.
func (d *Detector) hash(f *os.File) ([32]byte, error) {
	key, err := fileid.Of(f)
	if err != nil {
		return [32]byte{}, err
	}
	d.mu.Lock()
	sum, ok := d.cache[key]
	d.mu.Unlock()
	if ok {
		return sum, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, int64(key.Size))); err != nil {
		return [32]byte{}, err
	}
	copy(sum[:], h.Sum(nil))
	d.mu.Lock()
	d.cache[key] = sum
	d.mu.Unlock()
	return sum, nil
}

// Hash returns the SHA-256 of the open regular file f, cached by the
// file's identity (device, inode, size, times) so that an unchanged file is
// read once.
func (d *Detector) Hash(f *os.File) ([32]byte, error) { return d.hash(f) }

// Known returns how many distinct interpreter files the host scan found.
func (d *Detector) Known() int {
	d.once.Do(d.scan)
	return len(d.known)
}

// Check decides about the executable open as f, found at realPath after
// resolving symlinks, which will run with argv (argv[0] is the manifest's
// command path). It returns an error wrapping ErrDenied for a script (its
// "#!" line would start an interpreter), for a file or applet whose name is
// denied, and for a file whose content is that of an interpreter on the host.
func (d *Detector) Check(f *os.File, realPath string, argv []string) error {
	d.once.Do(d.scan)
	var head [2]byte
	if n, _ := f.ReadAt(head[:], 0); n == 2 && string(head[:]) == "#!" {
		return fmt.Errorf("%w: %s is a script", ErrDenied, realPath)
	}
	sum, err := d.hash(f)
	if err != nil {
		return fmt.Errorf("%w: cannot inspect %s: %v", ErrDenied, realPath, err)
	}
	base := filepath.Base(realPath)
	if d.multiCall[sum] || multiCall[base] {
		if a := applet(argv); a == "" || Denied(a) {
			return fmt.Errorf("%w: %s runs applet %q", ErrDenied, realPath, a)
		}
		return nil
	}
	if len(argv) > 0 && Denied(filepath.Base(argv[0])) {
		return fmt.Errorf("%w: %s", ErrDenied, argv[0])
	}
	if Denied(base) {
		return fmt.Errorf("%w: %s", ErrDenied, realPath)
	}
	if name, ok := d.known[sum]; ok {
		return fmt.Errorf("%w: %s is a copy of %s", ErrDenied, realPath, name)
	}
	return nil
}

// applet is what a busybox-like binary will run: the base name of argv[0],
// or argv[1] when argv[0] names the multi-call binary itself.
func applet(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	a := filepath.Base(argv[0])
	// busybox itself treats any argv[0] starting with its name this way.
	if strings.HasPrefix(a, "busybox") || strings.HasPrefix(a, "toybox") {
		if len(argv) < 2 {
			return ""
		}
		return filepath.Base(argv[1])
	}
	return a
}
