package egress_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/egress"
)

func TestNormalizeHost(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Example.COM", "example.com"},
		{"example.com.", "example.com"},
		{"127.0.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"169.254.43518", "169.254.169.254"},
		{"0xA9.0xFE.0xA9.0xFE", "169.254.169.254"},
		{"[::1]", "::1"},
		{"[::ffff:127.0.0.1]", "127.0.0.1"},
		{"[FE80::1]", "fe80::1"},
		{"a_b.example", "a_b.example"},
	} {
		got, _, err := egress.NormalizeHost(c.in)
		if err != nil || got != c.want {
			t.Errorf("NormalizeHost(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", ".", "a..b", "1.2.3.256", "1.2.3.4.5", "08.1.1.1", "exa mple.com",
		"bücher.de", "[::1", "::1]", "[fe80::1%eth0]", "4294967296", "example.123", "a.0x"} {
		if got, _, err := egress.NormalizeHost(in); !errors.Is(err, egress.ErrBadHost) {
			t.Errorf("NormalizeHost(%q) = %q, %v; want ErrBadHost", in, got, err)
		}
	}
}

func TestSpecial(t *testing.T) {
	for _, s := range []string{"127.0.0.1", "10.1.2.3", "172.31.255.255", "192.168.1.1", "169.254.169.254",
		"100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "fe80::1", "fd00:ec2::254",
		"::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::1", "::127.0.0.1", "::a9fe:a9fe",
		"192.0.2.1", "198.51.100.1", "203.0.113.1", "192.88.99.1", "2001:db8::1"} {
		if !egress.Special(netip.MustParseAddr(s)) {
			t.Errorf("Special(%s) = false, want true", s)
		}
	}
	for _, s := range []string{"1.1.1.1", "93.184.216.34", "2606:4700::1111"} {
		if egress.Special(netip.MustParseAddr(s)) {
			t.Errorf("Special(%s) = true, want false", s)
		}
	}
}

func TestPolicy(t *testing.T) {
	p, err := egress.NewPolicy([]sandbox.Destination{
		{Host: "API.example.com.", Port: 443}, {Host: "*.cdn.example", Port: 443}, {Host: "10.0.0.5", Port: 8080},
	}, []netip.Prefix{netip.MustParsePrefix("192.168.7.0/24")})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host string
		port int
		code string
	}{
		{"api.example.com", 443, ""},
		{"API.EXAMPLE.COM.", 443, ""},
		{"api.example.com", 80, "not_allowed"},
		{"evil.example.com", 443, "not_allowed"},
		{"a.b.cdn.example", 443, ""},
		{"cdn.example", 443, "not_allowed"},
		{"xcdn.example", 443, "not_allowed"},
		{"10.0.0.5", 8080, ""},
		{"0x0a000005", 8080, ""},
		{"10.0.0.6", 8080, "not_allowed"},
		{"1.2.3.999", 443, "bad_request"},
	} {
		_, err := p.Match(c.host, c.port)
		if got := egress.Code(err); got != c.code {
			t.Errorf("Match(%q, %d): code %q, want %q (%v)", c.host, c.port, got, c.code, err)
		}
	}
	tgt, _ := p.Match("api.example.com", 443)
	for _, c := range []struct {
		addrs []string
		code  string
	}{
		{[]string{"93.184.216.34"}, ""},
		{[]string{"93.184.216.34", "127.0.0.1"}, "special_address"},
		{[]string{"169.254.169.254"}, "special_address"},
		{[]string{"::ffff:10.0.0.1"}, "special_address"},
		{[]string{"192.168.7.9"}, ""},
		{[]string{"192.168.8.9"}, "special_address"},
		{nil, "resolve_failed"},
	} {
		var as []netip.Addr
		for _, a := range c.addrs {
			as = append(as, netip.MustParseAddr(a))
		}
		_, err := p.Addresses(tgt, as)
		if got := egress.Code(err); got != c.code {
			t.Errorf("Addresses(%v): code %q, want %q", c.addrs, got, c.code)
		}
	}
	if _, err := egress.NewPolicy([]sandbox.Destination{{Host: "*.10.0.0.1", Port: 1}}, nil); err == nil {
		t.Errorf("wildcard over an address: no error")
	}
}

func FuzzNormalizeHost(f *testing.F) {
	for _, s := range []string{"example.com", "0x7f.1", "[::1]", "1.2.3.4", "a..b", "ÿ", "4294967295"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		norm, addr, err := egress.NormalizeHost(s)
		if err != nil {
			return
		}
		// Normalising is idempotent and addresses print as themselves.
		again, addr2, err := egress.NormalizeHost(norm)
		if err != nil || again != norm || addr2 != addr {
			t.Fatalf("%q -> %q -> %q, %v", s, norm, again, err)
		}
		if addr.IsValid() && addr.String() != norm {
			t.Fatalf("%q: addr %s but norm %q", s, addr, norm)
		}
	})
}
