package proc

import (
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Why ahead of time: creating a network namespace costs about 0.6 ms here
// (1 ms under load), as much as starting the tool itself. A tool with
// UnshareNet gets a new, empty namespace made in the background after an
// earlier start, entered with setns; each is handed out once. With none
// ready the starting thread makes its own, as before.
const netnsReady = 2

type netnsPool struct {
	mu      sync.Mutex
	ready   []*os.File
	filling bool
}

var emptyNetns netnsPool

// take returns a fresh namespace made ahead of time, nil when there is
// none, and has the pool make more.
func (p *netnsPool) take() *os.File {
	p.mu.Lock()
	var f *os.File
	if n := len(p.ready); n > 0 {
		f, p.ready = p.ready[n-1], p.ready[:n-1]
	}
	fill := !p.filling && len(p.ready) < netnsReady
	p.filling = p.filling || fill
	p.mu.Unlock()
	if fill {
		go p.fill()
	}
	return f
}

func (p *netnsPool) fill() {
	for {
		f := newNetns()
		p.mu.Lock()
		if f != nil {
			p.ready = append(p.ready, f)
		}
		if f == nil || len(p.ready) >= netnsReady {
			p.filling = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
}

// newNetns makes a network namespace on a thread of its own, which ends
// with it, and returns it open; nil when it cannot (not root).
func newNetns() *os.File {
	ch := make(chan *os.File, 1)
	go func() {
		// Never unlocked: the thread has left the agent's namespace and
		// ends with this goroutine.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ch <- nil
			return
		}
		f, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			f = nil
		}
		ch <- f
	}()
	return <-ch
}

// enterEmptyNetns moves the calling thread into a new, empty network
// namespace: one made ahead of time, or one made now.
func enterEmptyNetns() error {
	if f := emptyNetns.take(); f != nil {
		err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
		f.Close()
		if err == nil {
			return nil
		}
	}
	return unix.Unshare(unix.CLONE_NEWNET)
}
