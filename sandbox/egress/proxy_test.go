package egress_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/egress"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

// loopbackOnly is a real dialer that fails the test if the proxy ever
// tries an address outside loopback: tests send traffic nowhere else.
type loopbackOnly struct{ t testing.TB }

func (d loopbackOnly) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsLoopback() {
		d.t.Errorf("the proxy dialed %s: only loopback may be a test target", addr)
		return nil, errors.New("refused by the test")
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

type fixture struct {
	proxy    *egress.Proxy
	upstream *httptest.Server
	port     int
}

func newFixture(t *testing.T, mod ...func(*egress.Config)) fixture {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upstream saw %s", r.Host)
	}))
	t.Cleanup(up.Close)
	port := up.Listener.Addr().(*net.TCPAddr).Port
	cfg := egress.DefaultConfig()
	cfg.Resolver = sandboxtest.DNSServer(t, map[string]netip.Addr{
		"api.test.":    netip.MustParseAddr("127.0.0.1"),
		"rebind.test.": netip.MustParseAddr("10.9.9.9"),
		"meta.test.":   netip.MustParseAddr("169.254.169.254"),
		"lo2.test.":    netip.MustParseAddr("127.0.0.2"),
	})
	cfg.Dialer = loopbackOnly{t}
	cfg.AllowSpecial = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	for _, m := range mod {
		m(&cfg)
	}
	p, err := egress.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{proxy: p, upstream: up, port: port}
}

func (f fixture) dests(hosts ...string) []sandbox.Destination {
	var out []sandbox.Destination
	for _, h := range hosts {
		out = append(out, sandbox.Destination{Host: h, Port: f.port})
	}
	return out
}

// get fetches https://host:port/ through the proxy at proxyAddr with
// CONNECT, dialing with dial.
func get(dial func(ctx context.Context, network, addr string) (net.Conn, error), proxyAddr, host string, port int) (string, error) {
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: proxyAddr}),
		DialContext: dial, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("https://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestConnect(t *testing.T) {
	f := newFixture(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.proxy.Serve(ln, f.dests("api.test", "rebind.test", "meta.test", "lo2.test", "127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var d net.Dialer
	body, err := get(d.DialContext, ln.Addr().String(), "API.test.", f.port)
	if err != nil || body != "upstream saw API.test.:"+strconv.Itoa(f.port) {
		t.Fatalf("allowed name: got %q, %v", body, err)
	}
	if body, err := get(d.DialContext, ln.Addr().String(), "0x7f.1", f.port); err != nil || !strings.HasPrefix(body, "upstream saw") {
		t.Fatalf("literal address listed as 127.0.0.1, asked as 0x7f.1: got %q, %v", body, err)
	}
	for _, host := range []string{"rebind.test", "meta.test", "lo2.test", "other.test", "169.254.169.254", "127.0.0.2"} {
		if body, err := get(d.DialContext, ln.Addr().String(), host, f.port); err == nil {
			t.Errorf("%s: got through: %q", host, body)
		}
	}
	codes := map[string]string{}
	for _, dec := range s.Decisions() {
		codes[dec.Host] = dec.Code
	}
	for host, want := range map[string]string{"api.test": "", "127.0.0.1": "", "rebind.test": "special_address",
		"meta.test": "special_address", "lo2.test": "special_address", "other.test": "not_allowed",
		"169.254.169.254": "not_allowed", "127.0.0.2": "not_allowed"} {
		if got, ok := codes[host]; !ok || got != want {
			t.Errorf("decision for %s: got %q (recorded %v), want %q", host, got, ok, want)
		}
	}
	// Something that is neither CONNECT nor TLS gets a refusal, not a hang.
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET http://api.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n")
	line, _ := bufio.NewReader(c).ReadString('\n')
	if !strings.HasPrefix(line, "HTTP/1.1 403") {
		t.Errorf("plain GET: got %q, want a 403", line)
	}
}

// TestPinning: the proxy resolves a name once per connection and connects
// to the very addresses it checked. flip.test first answers 127.0.0.1
// (allowed here), then 10.9.9.9: a proxy that looked the name up again to
// connect — or let the dialer do it — would reach what the second answer
// says (the dialer fails the test on anything but an address of loopback).
// The next connection sees the new answer and is refused; a name with any
// special answer among others is refused whole.
func TestPinning(t *testing.T) {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "upstream")
	}))
	defer up.Close()
	port := up.Listener.Addr().(*net.TCPAddr).Port
	var mu sync.Mutex
	queries := 0
	cfg := egress.DefaultConfig()
	cfg.Resolver = sandboxtest.DNSServerFunc(t, func(name string) []netip.Addr {
		switch name {
		case "flip.test.":
			mu.Lock()
			defer mu.Unlock()
			queries++
			if queries == 1 {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
			}
			return []netip.Addr{netip.MustParseAddr("10.9.9.9")}
		case "mix.test.":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.9.9.9")}
		case "cgnat.test.":
			return []netip.Addr{netip.MustParseAddr("100.64.1.1")}
		}
		return nil
	})
	cfg.Dialer = loopbackOnly{t}
	cfg.AllowSpecial = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	p, err := egress.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Serve(ln, []sandbox.Destination{{Host: "flip.test", Port: port}, {Host: "mix.test", Port: port},
		{Host: "cgnat.test", Port: port}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var d net.Dialer
	if body, err := get(d.DialContext, ln.Addr().String(), "flip.test", port); err != nil || body != "upstream" {
		t.Fatalf("first connection to flip.test: %q, %v", body, err)
	}
	mu.Lock()
	n := queries
	mu.Unlock()
	if n != 1 {
		t.Fatalf("%d lookups of flip.test for one connection, want 1", n)
	}
	for _, host := range []string{"flip.test", "mix.test", "cgnat.test"} {
		if body, err := get(d.DialContext, ln.Addr().String(), host, port); err == nil {
			t.Errorf("%s: got through: %q", host, body)
		}
	}
	var got []string
	for _, dec := range s.Decisions() {
		got = append(got, dec.Host+"="+dec.Code+"@"+dec.Addr.String())
	}
	want := []string{"flip.test=@127.0.0.1", "flip.test=special_address@invalid IP",
		"mix.test=special_address@invalid IP", "cgnat.test=special_address@invalid IP"}
	if !slices.Equal(got, want) {
		t.Errorf("decisions:\n got %q\nwant %q", got, want)
	}
}
