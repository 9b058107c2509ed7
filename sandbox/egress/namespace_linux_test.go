package egress_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/writhq/writ/sandbox/egress"
	"github.com/writhq/writ/sandbox/sandboxtest"
	"golang.org/x/sys/unix"
)

// inNamespace runs fn on a thread moved into ns; the thread is discarded.
func inNamespace(t *testing.T, ns *os.File, fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread changed namespace
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			t.Errorf("setns: %v", err)
			return
		}
		fn()
	}()
	<-done
}

// TestNamespace checks Start: the listeners live in a namespace of their
// own, reached there by CONNECT and by TLS with SNI on the allowlisted
// port, while the host's loopback does not see them.
func TestNamespace(t *testing.T) {
	f := newFixture(t)
	s, err := f.proxy.Start(f.dests("api.test", "meta.test"))
	if errors.Is(err, egress.ErrUnsupported) {
		sandboxtest.RequireAvailable(t, "egress namespace", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.Contains(string(s.Hosts()), "127.0.0.1\tapi.test\n") {
		t.Errorf("hosts: %q", s.Hosts())
	}
	// http.Transport dials on goroutines of its own: each dial enters the
	// namespace on a thread of its own.
	nsDial := func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		inNamespace(t, s.Namespace(), func() {
			var d net.Dialer
			c, err = d.DialContext(ctx, network, addr)
		})
		return c, err
	}
	body, err := get(nsDial, "127.0.0.1:3128", "api.test", f.port)
	if err != nil || !strings.HasPrefix(body, "upstream saw api.test") {
		t.Errorf("CONNECT in the namespace: got %q, %v", body, err)
	}
	inNamespace(t, s.Namespace(), func() {
		// Sockets made on this thread are in the tool's namespace.
		c, err := tls.Dial("tcp4", "127.0.0.1:"+strconv.Itoa(f.port), &tls.Config{ServerName: "api.test", InsecureSkipVerify: true})
		if err != nil {
			t.Errorf("TLS with SNI to the allowlisted port: %v", err)
			return
		}
		fmt.Fprintf(c, "GET / HTTP/1.0\r\nHost: api.test\r\n\r\n")
		b, _ := io.ReadAll(c)
		c.Close()
		if !strings.Contains(string(b), "upstream saw api.test") {
			t.Errorf("SNI: got %q", b)
		}
		if c, err := tls.Dial("tcp4", "127.0.0.1:"+strconv.Itoa(f.port), &tls.Config{ServerName: "meta.test", InsecureSkipVerify: true}); err == nil {
			c.Close()
			t.Errorf("SNI meta.test (169.254.169.254): handshake succeeded")
		}
		if c, err := net.Dial("tcp4", f.upstream.Listener.Addr().String()); err == nil {
			// The same port in the namespace is the proxy; the host's
			// loopback must not be reachable by any other port.
			c.Close()
		}
		if c, err := net.Dial("tcp4", "127.0.0.1:1"); err == nil {
			c.Close()
			t.Errorf("reached a port the proxy does not listen on")
		}
	})
}
