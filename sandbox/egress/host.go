package egress

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// NormalizeHost returns the one spelling a host name or address has for
// matching: ASCII lower case without a trailing dot for names; for IPv4 the
// dotted quad whatever the spelling (inet_aton forms: "2130706433",
// "0x7f.1", "0177.0.0.1"), and for IPv6 the RFC 5952 text without brackets.
// addr is valid when the host is an address. Anything else (empty labels,
// non-ASCII, a name whose last label is numeric but is no IPv4 address) is
// an error wrapping ErrBadHost.
func NormalizeHost(h string) (norm string, addr netip.Addr, err error) {
	bad := func(why string) (string, netip.Addr, error) {
		return "", netip.Addr{}, fmt.Errorf("%w: %.80q: %s", ErrBadHost, h, why)
	}
	if h == "" || len(h) > 255 {
		return bad("empty or too long")
	}
	if strings.HasPrefix(h, "[") || strings.Contains(h, ":") {
		s := h
		if strings.HasPrefix(h, "[") || strings.HasSuffix(h, "]") {
			if len(h) < 2 || h[0] != '[' || h[len(h)-1] != ']' {
				return bad("unbalanced brackets")
			}
			s = h[1 : len(h)-1]
		}
		if strings.Contains(s, "%") {
			return bad("malformed IPv6 literal")
		}
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() {
			return bad("malformed IPv6 literal")
		}
		if a.Is4In6() {
			a = a.Unmap()
		}
		return a.String(), a, nil
	}
	s := strings.ToLower(strings.TrimSuffix(h, "."))
	if s == "" {
		return bad("empty")
	}
	labels := strings.Split(s, ".")
	if last := labels[len(labels)-1]; last != "" && numeric(last) {
		a, ok := parseIPv4(labels)
		if !ok {
			return bad("ends in a number but is not an IPv4 address")
		}
		return a.String(), a, nil
	}
	if len(s) > 253 {
		return bad("longer than 253 bytes")
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return bad("empty or over-long label")
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return bad("character outside a-z 0-9 - _ (use punycode for other names)")
			}
		}
	}
	return s, netip.Addr{}, nil
}

// numeric says whether a label is a number in inet_aton's sense: decimal,
// 0x-hex or 0-octal digits (an invalid digit still counts: "09" is a bad
// number, not a name).
func numeric(l string) bool {
	if strings.HasPrefix(l, "0x") {
		l = l[2:]
		for i := 0; i < len(l); i++ {
			if !strings.ContainsRune("0123456789abcdef", rune(l[i])) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

// parseIPv4 reads one to four parts the way inet_aton does: the last part
// fills the remaining bytes.
func parseIPv4(parts []string) (netip.Addr, bool) {
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v [4]uint64
	for i, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(p, "0x"):
			p, base = p[2:], 16
			if p == "" {
				p = "0"
			}
		case len(p) > 1 && p[0] == '0':
			p, base = p[1:], 8
		}
		n, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		v[i] = n
	}
	n := len(parts)
	for i := 0; i < n-1; i++ {
		if v[i] > 255 {
			return netip.Addr{}, false
		}
	}
	if v[n-1] >= 1<<(8*(5-n)) {
		return netip.Addr{}, false
	}
	var b [4]byte
	for i := 0; i < n-1; i++ {
		b[i] = byte(v[i])
	}
	last := v[n-1]
	for i := 3; i >= n-1; i-- {
		b[i] = byte(last)
		last >>= 8
	}
	return netip.AddrFrom4(b), true
}
