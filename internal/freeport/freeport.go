// Package freeport hands out loopback ports for servers that tests and
// benchmarks start in other processes, where a port must be chosen before
// the server binds it.
//
// The usual way, binding port 0 and closing it, picks from the kernel's
// ephemeral range, which every outgoing connection and every other test
// process draws from too: between the close and the server's bind, another
// process may take the port (seen: "bind: address already in use" for a
// server's UDP port while other packages' tests ran). Ports here come from
// below the ephemeral range instead, and each is claimed across processes
// with a lock file held until this process exits.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// The range handed out: below Linux's default ephemeral range (32768-60999)
// and macOS's (49152-65535), above the ports services usually take.
const (
	low  = 20000
	high = 32768
)

var (
	mu   sync.Mutex
	held []*os.File // lock files, kept open for the life of the process
)

// Loopback returns 127.0.0.1:PORT, a port free for both TCP and UDP that no
// other caller of this package, in this process or another, gets while this
// process lives.
func Loopback() (string, error) {
	dir := filepath.Join(os.TempDir(), "writ-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", err
	}
	mu.Lock()
	defer mu.Unlock()
	for range 200 {
		port := low + rand.IntN(high-low)
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_RDWR|os.O_CREATE, 0o666)
		if err != nil {
			return "", err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close() // another process holds it
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if free(addr) {
			held = append(held, f)
			return addr, nil
		}
		f.Close() // in use by something else: leave it
	}
	return "", errors.New("freeport: no loopback port free for both TCP and UDP")
}

// Block returns the first of n consecutive loopback ports, each free for TCP
// and UDP and held as Loopback holds one (for scripts that number their
// ports from a base).
func Block(n int) (int, error) {
	dir := filepath.Join(os.TempDir(), "writ-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, err
	}
	mu.Lock()
	defer mu.Unlock()
try:
	for range 200 {
		base := low + rand.IntN(high-low-n)
		var got []*os.File
		release := func() {
			for _, f := range got {
				f.Close()
			}
		}
		for port := base; port < base+n; port++ {
			f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_RDWR|os.O_CREATE, 0o666)
			if err != nil {
				release()
				return 0, err
			}
			got = append(got, f)
			if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil || !free(net.JoinHostPort("127.0.0.1", strconv.Itoa(port))) {
				release()
				continue try
			}
		}
		held = append(held, got...)
		return base, nil
	}
	return 0, errors.New("freeport: no block of loopback ports free")
}

// free reports whether addr can be bound for TCP and for UDP now.
func free(addr string) bool {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer l.Close()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	pc.Close()
	return true
}

// MustLoopback is Loopback for callers that cannot go on without a port.
func MustLoopback() string {
	addr, err := Loopback()
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return addr
}
