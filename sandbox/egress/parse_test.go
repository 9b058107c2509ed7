package egress_test

import (
	"bufio"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/writhq/writ/sandbox/egress"
)

func TestReadConnect(t *testing.T) {
	for _, c := range []struct {
		in   string
		host string
		port int
	}{
		{"CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n", "api.example.com", 443},
		{"CONNECT [::1]:8443 HTTP/1.0\n\n", "[::1]", 8443},
	} {
		h, p, err := egress.ReadConnect(bufio.NewReader(strings.NewReader(c.in)))
		if err != nil || h != c.host || p != c.port {
			t.Errorf("%q: got %q %d %v, want %q %d", c.in, h, p, err, c.host, c.port)
		}
	}
	for _, in := range []string{
		"GET http://x/ HTTP/1.1\r\n\r\n",
		"CONNECT example.com HTTP/1.1\r\n\r\n",
		"CONNECT example.com:0 HTTP/1.1\r\n\r\n",
		"CONNECT example.com:65536 HTTP/1.1\r\n\r\n",
		"CONNECT example.com:+443 HTTP/1.1\r\n\r\n",
		"CONNECT ::1:443 HTTP/1.1\r\n\r\n",
		"CONNECT example.com:443 HTTP/1.1\r\nHost: x\r\n",
		"CONNECT example.com:443 HTTP/1.1\r\nno colon\r\n\r\n",
		"CONNECT example.com:443 HTTP/2\r\n\r\n",
		"CONNECT a:1 HTTP/1.1\r\nX: " + strings.Repeat("a", 9000) + "\r\n\r\n",
	} {
		if _, _, err := egress.ReadConnect(bufio.NewReader(strings.NewReader(in))); !errors.Is(err, egress.ErrBadRequest) {
			t.Errorf("%.60q: got %v, want ErrBadRequest", in, err)
		}
	}
}

// clientHello returns the first record a real crypto/tls client sends.
func clientHello(t testing.TB, serverName string) []byte {
	a, b := net.Pipe()
	go func() {
		c := tls.Client(a, &tls.Config{ServerName: serverName, InsecureSkipVerify: true})
		_ = c.Handshake()
		c.Close()
	}()
	defer b.Close()
	hdr := make([]byte, 5)
	if _, err := readFull(b, hdr); err != nil {
		t.Fatal(err)
	}
	n, err := egress.RecordLen(hdr)
	if err != nil {
		t.Fatal(err)
	}
	rec := make([]byte, n)
	copy(rec, hdr)
	if _, err := readFull(b, rec[5:]); err != nil {
		t.Fatal(err)
	}
	return rec
}

func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func TestServerName(t *testing.T) {
	rec := clientHello(t, "api.example.com")
	if got, err := egress.ServerName(rec); err != nil || got != "api.example.com" {
		t.Fatalf("got %q %v", got, err)
	}
	if _, err := egress.ServerName(clientHello(t, "")); !errors.Is(err, egress.ErrBadRequest) {
		t.Errorf("no SNI: got %v", err)
	}
	for i := 0; i < len(rec); i += 7 {
		if _, err := egress.ServerName(rec[:i]); err == nil {
			t.Errorf("truncated at %d: no error", i)
		}
	}
}

func FuzzReadConnect(f *testing.F) {
	f.Add("CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n")
	f.Add("CONNECT [::1]:1 HTTP/1.0\n\n")
	f.Add("GET / HTTP/1.1\r\n\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		host, port, err := egress.ReadConnect(bufio.NewReader(strings.NewReader(in)))
		if err != nil {
			if !errors.Is(err, egress.ErrBadRequest) {
				t.Fatalf("error %v does not wrap ErrBadRequest", err)
			}
			return
		}
		if port < 1 || port > 65535 || host == "" || !strings.HasPrefix(in, "CONNECT ") {
			t.Fatalf("accepted %q as %q %d", in, host, port)
		}
	})
}

func FuzzServerName(f *testing.F) {
	f.Add(clientHello(f, "api.example.com"))
	f.Add([]byte{0x16, 3, 1, 0, 4, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, rec []byte) {
		name, err := egress.ServerName(rec)
		if err != nil {
			if !errors.Is(err, egress.ErrBadRequest) {
				t.Fatalf("error %v does not wrap ErrBadRequest", err)
			}
			return
		}
		if name == "" || len(name) > len(rec) {
			t.Fatalf("name %q from %d bytes", name, len(rec))
		}
	})
}
