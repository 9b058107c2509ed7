package egress

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// inNewNetns runs fn on an OS thread moved into a new network namespace
// with loopback up, and returns that namespace. Sockets fn creates stay in
// it. The thread is never given back to the Go scheduler: it ends with its
// goroutine, so no other goroutine ever runs in the wrong namespace.
func inNewNetns(fn func() error) (*os.File, error) {
	type result struct {
		f   *os.File
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // deliberately never unlocked
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("%w: new network namespace: %v (needs root)", ErrUnsupported, err)}
			return
		}
		f, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			ch <- result{err: fmt.Errorf("%w: %v", ErrUnsupported, err)}
			return
		}
		if err := loopbackUp(); err != nil {
			f.Close()
			ch <- result{err: fmt.Errorf("%w: loopback: %v", ErrUnsupported, err)}
			return
		}
		if err := fn(); err != nil {
			f.Close()
			ch <- result{err: fmt.Errorf("egress: listen in the tool's namespace: %w", err)}
			return
		}
		ch <- result{f: f}
	}()
	r := <-ch
	return r.f, r.err
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
