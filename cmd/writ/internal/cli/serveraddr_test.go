package cli

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestServerURLs(t *testing.T) {
	for _, c := range []struct {
		in, ca, want, err string
	}{
		{in: "http://127.0.0.1:7070", want: "http://127.0.0.1:7070"},
		{in: "127.0.0.1:7070", want: "http://127.0.0.1:7070"},
		{in: "127.0.0.1:7070", ca: "ca.pem", want: "https://127.0.0.1:7070"},
		{in: "https://a:1, b:2 ,http://c:3/", ca: "ca.pem", want: "https://a:1,https://b:2,http://c:3"},
		{in: "ftp://a:1", err: "give a URL such as"},
		{in: "http://a:1/v1/intents", err: "give a URL such as"},
		{in: " , ", err: "--server is empty"},
	} {
		e := &env{caFile: c.ca}
		got, err := e.serverURLs(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("serverURLs(%q) = %q, %v; want an error with %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("serverURLs(%q, ca %q) = %q, %v; want %q", c.in, c.ca, got, err, c.want)
		}
	}
}

func TestDefaultServerFromEnv(t *testing.T) {
	t.Setenv("WRIT_SERVER", "s1:7070,s2:7070")
	if got := defaultServer(); got != "s1:7070,s2:7070" {
		t.Fatalf("defaultServer() = %q, want WRIT_SERVER's value", got)
	}
}

// TestClientMistakes runs a client command against the servers a user gets
// wrong — one that is not running, a TLS one without its CA or over plain
// HTTP, a plain one over https — and checks the exit status and that the
// message says what to do.
func TestClientMistakes(t *testing.T) {
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}()
	ok := func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{}`)) }
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(ok))
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.HandlerFunc(ok))
	defer plain.Close()
	tlsHost := strings.TrimPrefix(tlsSrv.URL, "https://")
	plainHost := strings.TrimPrefix(plain.URL, "http://")
	for _, c := range []struct{ name, server, want string }{
		{"not running", closed, "is the server running?"},
		{"TLS without its CA", "https://" + tlsHost, "give the cluster CA with --ca FILE"},
		{"TLS over plain HTTP", "http://" + tlsHost, "serves TLS: use https://"},
		{"plain over https", "https://" + plainHost, "the server speaks plain HTTP: use http://"},
		{"a path", "127.0.0.1:7070/v1", "give a URL such as"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			code := Main([]string{"receipt", "get", "0", "--server", c.server}, strings.NewReader(""), &out, &errw)
			if code != 2 || !strings.Contains(errw.String(), c.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 and %q", code, errw.String(), c.want)
			}
		})
	}
}

func TestAgentServers(t *testing.T) {
	for _, c := range []struct {
		in    []string
		hosts string
		plain bool
		err   string
	}{
		{in: []string{"s1:7070"}, hosts: "s1:7070"},
		{in: []string{"https://s1:7070/", " s2:7070"}, hosts: "s1:7070,s2:7070"},
		{in: []string{"s1:7070,https://[::1]:7071"}, hosts: "s1:7070,[::1]:7071"},
		{in: []string{"http://127.0.0.1:7070"}, hosts: "127.0.0.1:7070", plain: true},
		{in: []string{"http://127.0.0.1:7070,s2:7070"}, err: "mixes"},
		{in: []string{"s1"}, err: "host:port"},
		{in: []string{"ftp://s1:1"}, err: "host:port"},
		{in: []string{"https://s1:1?x=1"}, err: "host:port"},
		{in: []string{"https://u:p@s1:1"}, err: "host:port"},
		{in: []string{" , "}, err: "empty"},
		{in: nil, err: "empty"},
	} {
		hosts, plain, err := agentServers(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want an error with %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || strings.Join(hosts, ",") != c.hosts || plain != c.plain {
			t.Errorf("%q: %q plain=%v %v; want %q plain=%v", c.in, hosts, plain, err, c.hosts, c.plain)
		}
	}
}
