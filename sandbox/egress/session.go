package egress

import (
	"errors"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/writhq/writ/sandbox"
)

// Session is the network of one invocation: a namespace whose loopback
// holds the proxy's listeners, and the proxy serving them.
type Session struct {
	p         *Proxy
	policy    *Policy
	ns        *os.File // nil for a session served on a caller's listener
	listeners []net.Listener
	ports     []int
	proxyPort int // where the tool finds the HTTP proxy

	mu        sync.Mutex
	closed    bool
	conns     map[net.Conn]bool
	decisions []Decision
	allowed   int   // attempts allowed, listed or not
	refused   int   // attempts refused
	up, down  int64 // bytes carried by ended connections
	sem       chan struct{}
	wg        sync.WaitGroup
}

func (p *Proxy) newSession(dests []sandbox.Destination) (*Session, error) {
	pol, err := NewPolicy(dests, p.cfg.AllowSpecial)
	if err != nil {
		return nil, err
	}
	return &Session{p: p, policy: pol, conns: map[net.Conn]bool{}, sem: make(chan struct{}, p.cfg.MaxConns)}, nil
}

// Start makes the network of one invocation with the allowlist dests: a
// new network namespace with only loopback up, the proxy listening in it on
// 127.0.0.1 at ProxyPort and at every allowlisted port, and the proxy
// serving those listeners until Close. It needs CAP_SYS_ADMIN (root);
// without it the error wraps ErrUnsupported.
func (p *Proxy) Start(dests []sandbox.Destination) (*Session, error) {
	s, err := p.newSession(dests)
	if err != nil {
		return nil, err
	}
	s.ports = s.policy.Ports()
	if !slices.Contains(s.ports, p.cfg.ProxyPort) {
		s.ports = append(s.ports, p.cfg.ProxyPort)
	}
	ns, err := inNewNetns(func() error {
		for _, port := range s.ports {
			ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port))
			if err != nil {
				return err
			}
			s.listeners = append(s.listeners, ln)
		}
		return nil
	})
	if err != nil {
		for _, ln := range s.listeners {
			ln.Close()
		}
		return nil, err
	}
	s.ns, s.proxyPort = ns, p.cfg.ProxyPort
	for i, ln := range s.listeners {
		s.serve(ln, s.ports[i])
	}
	return s, nil
}

// Serve serves the proxy with the allowlist dests on a listener the
// caller made (in whatever namespace); a TLS connection's port is ln's.
func (p *Proxy) Serve(ln net.Listener, dests []sandbox.Destination) (*Session, error) {
	s, err := p.newSession(dests)
	if err != nil {
		return nil, err
	}
	port := 0
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		port = a.Port
	}
	s.listeners, s.ports, s.proxyPort = []net.Listener{ln}, []int{port}, port
	s.serve(ln, port)
	return s, nil
}

func (s *Session) serve(ln net.Listener, port int) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					continue
				}
				return
			}
			select {
			case s.sem <- struct{}{}:
			default:
				c.Close() // over MaxConns
				continue
			}
			if !s.track(c) {
				<-s.sem
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer func() { <-s.sem }()
				defer s.untrack(c)
				s.handle(c, port)
			}()
		}
	}()
}

func (s *Session) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	s.conns[c] = true
	return true
}

func (s *Session) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Ports lists the ports the proxy listens on in the namespace.
func (s *Session) Ports() []int { return slices.Clone(s.ports) }

// Namespace is the network namespace tools of this session join (nil for
// Serve's sessions). It stays valid until Close.
func (s *Session) Namespace() *os.File { return s.ns }

// Env is what the tier adds to the tool's environment: the proxy's address
// for HTTPS clients.
func (s *Session) Env() []string {
	u := "http://127.0.0.1:" + strconv.Itoa(s.proxyPort)
	return []string{"HTTPS_PROXY=" + u, "https_proxy=" + u}
}

// Hosts is an /etc/hosts for tiers that own the tool's root: localhost and
// every exact allowlisted name at 127.0.0.1, so that a tool connecting to
// name:port directly reaches the proxy's listener for port.
func (s *Session) Hosts() []byte {
	var b strings.Builder
	b.WriteString("127.0.0.1\tlocalhost\n")
	for _, n := range s.policy.Names() {
		b.WriteString("127.0.0.1\t" + n + "\n")
	}
	return []byte(b.String())
}

// Decisions returns what the tool asked for and what the proxy decided,
// in order (at most 256).
func (s *Session) Decisions() []Decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.decisions)
}

// Close stops the listeners, cuts every connection, waits for the
// handlers, and releases the namespace.
func (s *Session) Close() error {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	for _, ln := range s.listeners {
		ln.Close()
	}
	s.wg.Wait()
	if s.ns != nil {
		return s.ns.Close()
	}
	return nil
}
