package egress_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/egress"
)

// tunnel opens a CONNECT tunnel to target through the proxy at proxyAddr
// and returns the connection once the proxy answered 200.
func tunnel(t *testing.T, proxyAddr, target string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		c.Close()
		t.Fatalf("CONNECT %s: %v %v", target, resp, err)
	}
	return c
}

// TestSNIMismatch: through a CONNECT tunnel to an allowed name, a real TLS
// client naming another server (domain fronting) is cut before its
// ClientHello reaches the destination, and the attempt is recorded as
// refused with sni_mismatch; the same client naming the CONNECT host gets
// through.
func TestSNIMismatch(t *testing.T) {
	f := newFixture(t, func(c *egress.Config) { c.HandshakeTimeout = time.Second })
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.proxy.Serve(ln, f.dests("api.test", "127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	target := net.JoinHostPort("api.test", strconv.Itoa(f.port))
	for _, c := range []struct {
		sni  string
		ok   bool
		code string
	}{
		{"api.test", true, ""},
		{"API.Test", true, ""},
		{"forbidden.example", false, "sni_mismatch"},
		{"", false, "sni_mismatch"}, // a name CONNECT with no name in TLS
	} {
		conn := tunnel(t, ln.Addr().String(), target)
		cfg := &tls.Config{ServerName: c.sni, InsecureSkipVerify: true}
		tc := tls.Client(conn, cfg)
		err := tc.Handshake()
		tc.Close()
		if (err == nil) != c.ok {
			t.Errorf("SNI %q: handshake error %v, want success %v", c.sni, err, c.ok)
		}
	}
	// A tool that waits longer than the handshake timeout before its
	// ClientHello is still checked.
	conn := tunnel(t, ln.Addr().String(), target)
	time.Sleep(1500 * time.Millisecond)
	if err := tls.Client(conn, &tls.Config{ServerName: "late.example", InsecureSkipVerify: true}).Handshake(); err == nil {
		t.Error("a fronted ClientHello sent after the handshake timeout got through")
	}
	conn.Close()
	// An address CONNECT: a client sends no name, which passes.
	conn = tunnel(t, ln.Addr().String(), net.JoinHostPort("127.0.0.1", strconv.Itoa(f.port)))
	tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		t.Errorf("address CONNECT, no SNI: %v", err)
	}
	tc.Close()
	s.Close()
	a := s.Audit()
	var codes []string
	for _, e := range a.Entries {
		codes = append(codes, e.Host+"="+e.Reason)
		if e.Allowed != (e.Reason == "") {
			t.Errorf("entry %+v: allowed and reason disagree", e)
		}
	}
	want := "api.test=,api.test=,api.test=sni_mismatch,api.test=sni_mismatch,api.test=sni_mismatch,127.0.0.1="
	if strings.Join(codes, ",") != want {
		t.Errorf("entries: got %s, want %s", strings.Join(codes, ","), want)
	}
	if a.Allowed != 3 || a.Refused != 3 {
		t.Errorf("counts: allowed %d refused %d, want 3 and 3", a.Allowed, a.Refused)
	}
	for _, e := range a.Entries[2:5] {
		if e.BytesUp != 0 {
			t.Errorf("refused %+v: %d bytes reached the destination", e, e.BytesUp)
		}
	}
}

// TestAudit: every attempt is counted, allowed or refused with its reason,
// with the bytes each way; the list keeps the first
// sandbox.MaxEgressEntries and the counts cover the rest.
func TestAudit(t *testing.T) {
	f := newFixture(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.proxy.Serve(ln, f.dests("api.test", "meta.test"))
	if err != nil {
		t.Fatal(err)
	}
	var d net.Dialer
	body, err := get(d.DialContext, ln.Addr().String(), "api.test", f.port)
	if err != nil || !strings.HasPrefix(body, "upstream saw") {
		t.Fatalf("allowed: %q %v", body, err)
	}
	if _, err := get(d.DialContext, ln.Addr().String(), "meta.test", f.port); err == nil {
		t.Fatal("metadata address: no error")
	}
	const extra = sandbox.MaxEgressEntries + 6
	for range extra {
		get(d.DialContext, ln.Addr().String(), "other.test", f.port)
	}
	s.Close()
	a := s.Audit()
	if len(a.Entries) != sandbox.MaxEgressEntries {
		t.Fatalf("entries: %d, want %d", len(a.Entries), sandbox.MaxEgressEntries)
	}
	if a.Allowed != 1 || a.Refused != 1+extra {
		t.Errorf("counts: allowed %d refused %d, want 1 and %d", a.Allowed, a.Refused, 1+extra)
	}
	first, second, last := a.Entries[0], a.Entries[1], a.Entries[len(a.Entries)-1]
	if !first.Allowed || first.Host != "api.test" || first.Port != f.port || first.Via != "connect" ||
		first.BytesUp <= 0 || first.BytesDown <= 0 {
		t.Errorf("allowed entry: %+v", first)
	}
	if a.BytesUp != first.BytesUp || a.BytesDown != first.BytesDown {
		t.Errorf("totals %d/%d, want the one connection's %d/%d", a.BytesUp, a.BytesDown, first.BytesUp, first.BytesDown)
	}
	if second.Allowed || second.Reason != "special_address" || second.BytesUp != 0 {
		t.Errorf("refused metadata entry: %+v", second)
	}
	if last.Allowed || last.Host != "other.test" || last.Reason != "not_allowed" {
		t.Errorf("refused entry: %+v", last)
	}
}

// TestAuditHost: a host that is not a name is kept in the audit cut to
// 253 bytes of valid UTF-8 without control characters.
func TestAuditHost(t *testing.T) {
	f := newFixture(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.proxy.Serve(ln, f.dests("api.test"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s\x01\xff:443 HTTP/1.1\r\n\r\n", strings.Repeat("a", 400))
	http.ReadResponse(bufio.NewReader(c), nil)
	c.Close()
	s.Close()
	a := s.Audit()
	if len(a.Entries) != 1 || a.Refused != 1 {
		t.Fatalf("audit: %+v", a)
	}
	h := a.Entries[0].Host
	if !strings.HasPrefix(h, "aaaa") || len(h) > 253 || !utf8.ValidString(h) || strings.ContainsRune(h, 1) || a.Entries[0].Reason == "" {
		t.Errorf("host %q (%d bytes), reason %q", h, len(h), a.Entries[0].Reason)
	}
}
