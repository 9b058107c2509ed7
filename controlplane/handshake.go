package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"runtime"
	"sync"
	"time"
)

// handshakeListener serves the API's TLS: it does each connection's
// handshake before the HTTP server sees the connection, at most two per
// core at once, so that a crowd of new connections — thousands of clients
// connecting at once, or reconnecting after a failover — cannot take the
// cores from Raft's heartbeats with key exchanges and signatures. A
// connection waits for a handshake slot parked; past maxWaiting waiting or
// in handshake it is closed at once, before any cryptography: the client
// sees the connection refused and retries, as after a 429. Waiting and
// handshake together last at most handshakeTimeout; a connection that
// waited that long is closed, and counted as shed.
type handshakeListener struct {
	net.Listener
	cfg     *tls.Config
	slots   chan struct{} // handshakes at once
	places  chan struct{} // connections waiting or in handshake
	ready   chan net.Conn
	done    chan struct{}
	once    sync.Once
	shed    func() // counts a connection closed for want of a place
	timeout time.Duration
}

const (
	handshakeMaxWaiting = 1024
	handshakeTimeout    = 5 * time.Second
)

func newHandshakeListener(ln net.Listener, cfg *tls.Config, shed func()) *handshakeListener {
	return listenHandshakes(ln, cfg, shed, 2*runtime.GOMAXPROCS(0), handshakeMaxWaiting)
}

// listenHandshakes is newHandshakeListener with its bounds.
func listenHandshakes(ln net.Listener, cfg *tls.Config, shed func(), slots, places int) *handshakeListener {
	l := &handshakeListener{Listener: ln, cfg: cfg, slots: make(chan struct{}, slots),
		places: make(chan struct{}, places), ready: make(chan net.Conn), done: make(chan struct{}),
		shed: shed, timeout: handshakeTimeout}
	go l.accept()
	return l
}

func (l *handshakeListener) accept() {
	var pause time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				l.Close()
				return
			}
			// Out of descriptors, or a connection reset while queued: wait
			// a little, as net/http does, and go on.
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			time.Sleep(pause)
			continue
		}
		pause = 0
		select {
		case l.places <- struct{}{}:
			go l.handshake(c)
		default:
			l.shed()
			c.Close()
		}
	}
}

// handshake waits for a slot and does c's handshake, both within l.timeout:
// a client that waited longer has likely given up, and its handshake would
// be work for no one.
func (l *handshakeListener) handshake(c net.Conn) {
	defer func() { <-l.places }()
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		l.shed()
		c.Close()
		return
	case <-l.done:
		c.Close()
		return
	}
	tc := tls.Server(c, l.cfg)
	err := tc.HandshakeContext(ctx)
	<-l.slots
	if err != nil {
		c.Close()
		return
	}
	select {
	case l.ready <- tc:
	case <-l.done:
		tc.Close()
	}
}

// Accept returns the next connection whose handshake is done.
func (l *handshakeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handshakeListener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		err = l.Listener.Close()
	})
	return err
}
