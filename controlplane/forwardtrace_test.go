package controlplane

import (
	"crypto/tls"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestSendTraceShed: a forward is shed only when the peer accepted the
// connection and closed it before the request went out; not when the
// request was answered, when nothing listens, or when the peer never
// answers the handshake (a paused leader).
func TestSendTraceShed(t *testing.T) {
	t.Parallel()
	listen := func(serve func(net.Conn)) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go serve(c)
			}
		}()
		return ln.Addr().String()
	}
	cert, pool := selfSigned(t)
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	closing := listen(func(c net.Conn) { c.Close() })
	silent := listen(func(c net.Conn) { time.Sleep(3 * time.Second); c.Close() })
	answering := listen(func(c net.Conn) {
		tc := tls.Server(c, tlsCfg)
		defer tc.Close()
		buf := make([]byte, 4096)
		tc.Read(buf)
		tc.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
	})
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	nobody := dead.Addr().String()
	dead.Close()
	for _, tc := range []struct {
		name, addr string
		want       bool
	}{
		{"closed before the handshake", closing, true},
		{"answered", answering, false},
		{"nothing listening", nobody, false},
		{"no handshake before the deadline", silent, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
			var trace sendTrace
			req, _ := http.NewRequestWithContext(trace.context(t.Context()), http.MethodPost, "https://"+tc.addr+"/x", nil)
			resp, err := hc.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			if got := trace.shed(err); got != tc.want {
				t.Fatalf("shed(%v) = %v, want %v", err, got, tc.want)
			}
		})
	}
}
