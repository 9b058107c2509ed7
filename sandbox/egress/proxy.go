package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// Proxy makes one Session per invocation. It is safe for concurrent use.
type Proxy struct {
	cfg      Config
	resolver Resolver
	dialer   Dialer
}

// New returns a proxy with cfg.
func New(cfg Config) (*Proxy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Proxy{cfg: cfg, resolver: cfg.Resolver, dialer: cfg.Dialer}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	if p.dialer == nil {
		p.dialer = &net.Dialer{Timeout: cfg.DialTimeout}
	}
	return p, nil
}

// Decision records one connection the tool asked for.
type Decision struct {
	Host string     `json:"host"` // as the tool asked, normalised when it could be
	Port int        `json:"port"`
	Addr netip.Addr `json:"addr"` // the upstream address used, when one was
	Via  string     `json:"via"`  // "connect" or "sni"
	Code string     `json:"code"` // "" when allowed, else Code(err)
}

// maxDecisions bounds the record of one session.
const maxDecisions = 256

// handle serves one connection from the tool that arrived on port.
func (s *Session) handle(c net.Conn, port int) {
	defer c.Close()
	cfg := s.p.cfg
	_ = c.SetReadDeadline(time.Now().Add(cfg.HandshakeTimeout))
	br := bufio.NewReaderSize(c, maxRecord)
	d := Decision{Port: port}
	var err error
	if first, perr := br.Peek(1); perr != nil {
		return
	} else if first[0] == 0x16 {
		d.Via = "sni"
		d.Host, err = peekServerName(br)
	} else {
		d.Via = "connect"
		d.Host, d.Port, err = ReadConnect(br)
	}
	var up net.Conn
	if err == nil {
		up, d, err = s.connect(d)
	}
	d.Code = Code(err)
	s.record(d)
	if err != nil {
		if d.Via == "connect" {
			status := "403 Forbidden"
			if d.Code == "dial_failed" || d.Code == "resolve_failed" {
				status = "502 Bad Gateway"
			}
			fmt.Fprintf(c, "HTTP/1.1 %s\r\nX-Writ-Egress: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status, d.Code)
		}
		return
	}
	defer up.Close()
	if d.Via == "connect" {
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	if !s.track(up) {
		return
	}
	defer s.untrack(up)
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, br) // what was peeked (the ClientHello) goes first
		closeWrite(up)
		close(done)
	}()
	_, _ = io.Copy(c, up)
	closeWrite(c)
	<-done
}

// peekServerName reads the first TLS record without consuming it.
func peekServerName(br *bufio.Reader) (string, error) {
	hdr, err := br.Peek(5)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	n, err := RecordLen(hdr)
	if err != nil {
		return "", err
	}
	rec, err := br.Peek(n)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return ServerName(rec)
}

// connect checks d against the policy, resolves the name once, checks the
// answers, and dials exactly those addresses.
func (s *Session) connect(d Decision) (net.Conn, Decision, error) {
	t, err := s.policy.Match(d.Host, d.Port)
	if err != nil {
		return nil, d, err
	}
	d.Host = t.Host
	ctx, cancel := context.WithTimeout(context.Background(), s.p.cfg.DialTimeout)
	defer cancel()
	var resolved []netip.Addr
	if !t.Addr.IsValid() {
		if resolved, err = s.p.resolver.LookupNetIP(ctx, "ip", t.Host); err != nil {
			return nil, d, fmt.Errorf("%w: %s: %v", ErrResolve, t.Host, err)
		}
	}
	addrs, err := s.policy.Addresses(t, resolved)
	if err != nil {
		return nil, d, err
	}
	var last error
	for _, a := range addrs {
		d.Addr = a
		c, err := s.p.dialer.DialContext(ctx, "tcp", net.JoinHostPort(a.String(), strconv.Itoa(t.Port)))
		if err == nil {
			return c, d, nil
		}
		last = err
	}
	return nil, d, fmt.Errorf("%w: %s port %d: %v", ErrDial, t.Host, t.Port, last)
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// record keeps d, up to maxDecisions per session.
func (s *Session) record(d Decision) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.decisions) < maxDecisions {
		s.decisions = append(s.decisions, d)
	}
}
