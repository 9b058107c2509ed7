package egress

import "net/netip"

// special lists the ranges a tool never reaches unless they are explicitly
// allowed: loopback, RFC 1918 private, CGNAT, link-local (which holds the
// 169.254.169.254 metadata service), this-network, IETF protocol
// assignments, documentation, the 6to4 relay anycast, benchmarking,
// multicast, reserved and broadcast; for IPv6 unspecified and the
// IPv4-compatible ::/96, loopback, unique-local (fd00:ec2::254 is a metadata
// address), link-local, site-local, multicast, documentation, NAT64 and the
// 6to4/Teredo relays, which embed IPv4 addresses of any kind.
var special = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
		"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"::/96", "::1/128", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64",
		"2001::/32", "2001:db8::/32", "2002::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// Special reports whether a is in a range tools may not reach by default.
func Special(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range special {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
