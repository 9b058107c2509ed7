package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/egress"
)

// EgressConfig is the proxy configuration of tiers under the network
// cases: names resolved by a DNS server of the test's own (api.test is
// 127.0.0.1, rebind.test is 10.9.9.9, meta.test is 169.254.169.254,
// cgnat.test is 100.64.1.1), only
// 127.0.0.1 allowed among the special ranges, and a dialer that fails the
// test rather than send anything beyond loopback.
func EgressConfig(t testing.TB) egress.Config {
	cfg := egress.DefaultConfig()
	cfg.Resolver = DNSServer(t, map[string]netip.Addr{
		"api.test.":    netip.MustParseAddr("127.0.0.1"),
		"rebind.test.": netip.MustParseAddr("10.9.9.9"),
		"meta.test.":   netip.MustParseAddr("169.254.169.254"),
		"cgnat.test.":  netip.MustParseAddr("100.64.1.1"),
	})
	cfg.AllowSpecial = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	cfg.Dialer = loopbackDialer{t}
	return cfg
}

type loopbackDialer struct{ t testing.TB }

func (d loopbackDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsLoopback() {
		d.t.Errorf("ESCAPED: the egress proxy dialed %s", addr)
		return nil, errors.New("not a loopback address")
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

// upstream is a TLS server on the host's loopback that says who it is.
func upstream(t *testing.T) int {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upstream:%s", r.Host)
	}))
	t.Cleanup(s.Close)
	return s.Listener.Addr().(*net.TCPAddr).Port
}

// escapeNoNetwork: a tool whose manifest lists no destination reaches
// neither the host's loopback (another listener than the LoopbackConnect
// case's) nor a proxy.
func escapeNoNetwork(t *testing.T, h Harness) {
	port := upstream(t)
	for _, params := range []string{
		`{"op":"connect","data":"127.0.0.1:` + strconv.Itoa(port) + `"}`,
		`{"op":"connect","data":"127.0.0.1:3128"}`,
		`{"op":"sni","path":"127.0.0.1:` + strconv.Itoa(port) + `","data":"api.test"}`,
	} {
		o := run(t, h, h.Manifest(), params, "")
		if o.Egress != nil {
			t.Errorf("%s: an egress audit without a network allowlist: %+v", params, o.Egress)
		}
		if o.Status == sandbox.StatusOK {
			t.Errorf("ESCAPED: %s succeeded without a network allowlist: %s", params, brief(o))
			continue
		}
		failedAt(t, o, strings.SplitN(params, `"`, 5)[3]+":")
	}
}

// escapeAllowlist: with api.test allowlisted, the tool gets there through
// the proxy (by CONNECT and by TLS SNI) and nowhere else: not a non-listed
// name, not the host's loopback, not a name resolving to a private or
// metadata address, not a port that is not listed.
func escapeAllowlist(t *testing.T, h Harness) {
	port := upstream(t)
	p := strconv.Itoa(port)
	m := h.Manifest()
	m.Network = []sandbox.Destination{{Host: "api.test", Port: port}, {Host: "rebind.test", Port: port},
		{Host: "meta.test", Port: port}, {Host: "cgnat.test", Port: port}}
	o := run(t, h, m, `{"op":"fetch","data":"api.test:`+p+`"}`, "")
	if o.Status != sandbox.StatusOK || string(o.Output) != "upstream:api.test" {
		t.Fatalf("allowlisted api.test through CONNECT: %s", brief(o))
	}
	if a := o.Egress; a == nil || a.Allowed != 1 || a.Refused != 0 || len(a.Entries) != 1 ||
		a.Entries[0].Host != "api.test" || a.Entries[0].Port != port || !a.Entries[0].Allowed ||
		a.Entries[0].BytesUp <= 0 || a.Entries[0].BytesDown <= 0 || a.BytesDown != a.Entries[0].BytesDown {
		t.Errorf("egress audit of one allowed fetch: %+v", a)
	}
	// Domain fronting: CONNECT to the allowed name, TLS naming another.
	o = run(t, h, m, `{"op":"fetch","data":"api.test:`+p+`","path":"other.test"}`, "")
	if o.Status == sandbox.StatusOK {
		t.Errorf("ESCAPED: CONNECT api.test with SNI other.test: %s", brief(o))
	}
	if a := o.Egress; a == nil || a.Refused != 1 || len(a.Entries) != 1 || a.Entries[0].Reason != "sni_mismatch" ||
		a.Entries[0].BytesUp != 0 {
		t.Errorf("egress audit of a fronted fetch: %+v", a)
	}
	// The same name spelled in another case, with a trailing dot.
	o = run(t, h, m, `{"op":"fetch","data":"API.Test.:`+p+`"}`, "")
	if o.Status != sandbox.StatusOK || !strings.HasPrefix(string(o.Output), "upstream:") {
		t.Fatalf("allowlisted API.Test. through CONNECT: %s", brief(o))
	}
	o = run(t, h, m, `{"op":"sni","path":"127.0.0.1:`+p+`","data":"api.test"}`, "")
	if o.Status != sandbox.StatusOK || string(o.Output) != "upstream:api.test" {
		t.Fatalf("allowlisted api.test through SNI: %s", brief(o))
	}
	for _, c := range []struct{ params, code string }{
		{`{"op":"fetch","data":"other.test:` + p + `"}`, "not_allowed"},
		{`{"op":"fetch","data":"api.test:1"}`, "not_allowed"},
		{`{"op":"fetch","data":"127.0.0.1:` + p + `"}`, "not_allowed"},
		{`{"op":"fetch","data":"2130706433:` + p + `"}`, "not_allowed"},
		{`{"op":"fetch","data":"rebind.test:` + p + `"}`, "special_address"},
		{`{"op":"fetch","data":"meta.test:` + p + `"}`, "special_address"},
		{`{"op":"fetch","data":"cgnat.test:` + p + `"}`, "special_address"},
		{`{"op":"fetch","data":"169.254.169.254:` + p + `"}`, "not_allowed"},
		{`{"op":"fetch","data":"0xa9fea9fe:` + p + `"}`, "not_allowed"},
		{`{"op":"fetch","data":"[::ffff:169.254.169.254]:` + p + `"}`, "not_allowed"},
		{`{"op":"fetch","data":"[::1]:` + p + `"}`, "not_allowed"},
		{`{"op":"sni","path":"127.0.0.1:` + p + `","data":"meta.test"}`, ""},
		{`{"op":"sni","path":"127.0.0.1:` + p + `","data":"other.test"}`, ""},
		{`{"op":"connect","data":"127.0.0.1:1"}`, ""},
	} {
		o := run(t, h, m, c.params, "")
		if o.Status == sandbox.StatusOK {
			t.Errorf("ESCAPED: %s: %s", c.params, brief(o))
			continue
		}
		if c.code != "" && !strings.Contains(string(o.Stderr), c.code) {
			t.Errorf("%s: refused, but not with %s: %s", c.params, c.code, brief(o))
		}
		if a := o.Egress; c.code != "" && (a == nil || a.Refused != 1 || a.Allowed != 0 || len(a.Entries) != 1 || a.Entries[0].Reason != c.code) {
			t.Errorf("%s: egress audit %+v, want one refusal with %s", c.params, a, c.code)
		}
	}
}
