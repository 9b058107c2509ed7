package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
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
	// Up and Down count the bytes the proxy carried to and from the
	// destination, once the connection has ended.
	Up   int64 `json:"bytes_up"`
	Down int64 `json:"bytes_down"`
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
	i := s.record(d)
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
	var sent int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		if d.Via == "connect" {
			if err := s.tunnelServerName(c, br, d.Host); err != nil {
				s.refuse(i, err)
				up.Close() // ends the copy below too
				return
			}
		}
		sent, _ = io.Copy(up, br) // what was peeked (the ClientHello) goes first
		closeWrite(up)
	}()
	received, _ := io.Copy(c, up)
	closeWrite(c)
	<-done
	s.count(i, sent, received)
}

// tunnelServerName checks the first bytes the tool sends through a CONNECT
// tunnel to host: a TLS ClientHello must name host (no name at all passes
// only for an address host, where clients send none). Anything that is
// not TLS passes: the destination and port are what the policy allowed.
//
// The first byte is awaited without a deadline (a tool that waits before
// its ClientHello is still checked); the rest of a TLS record must follow
// within HandshakeTimeout.
func (s *Session) tunnelServerName(c net.Conn, br *bufio.Reader, host string) error {
	first, err := br.Peek(1)
	if err != nil || first[0] != 0x16 {
		return nil // closed, or not TLS
	}
	_ = c.SetReadDeadline(time.Now().Add(s.p.cfg.HandshakeTimeout))
	name, err := peekServerName(br)
	_ = c.SetReadDeadline(time.Time{})
	_, literal := netip.ParseAddr(strings.Trim(host, "[]"))
	switch {
	case errors.Is(err, ErrNoServerName) && literal == nil:
		return nil
	case errors.Is(err, ErrNoServerName):
		return fmt.Errorf("%w: no server name for %s", ErrSNIMismatch, host)
	case err != nil:
		return err
	}
	norm, _, err := NormalizeHost(name)
	if err != nil || norm != host {
		return fmt.Errorf("%w: %.80q for %s", ErrSNIMismatch, name, host)
	}
	return nil
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

// record keeps d, up to maxDecisions per session, counts it, and returns
// its index (-1 when not kept).
func (s *Session) record(d Decision) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.Code == "" {
		s.allowed++
	} else {
		s.refused++
	}
	if len(s.decisions) < maxDecisions {
		s.decisions = append(s.decisions, d)
		return len(s.decisions) - 1
	}
	return -1
}

// refuse turns the allowed decision i into a refusal for err.
func (s *Session) refuse(i int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.allowed--
	s.refused++
	if i >= 0 {
		s.decisions[i].Code = Code(err)
	}
}

// count adds the bytes an ended connection carried to decision i and to
// the session's totals.
func (s *Session) count(i int, up, down int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.up += up
	s.down += down
	if i >= 0 {
		s.decisions[i].Up, s.decisions[i].Down = up, down
	}
}
