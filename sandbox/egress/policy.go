package egress

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/writhq/writ/sandbox"
)

// Policy is the allowlist of one manifest, normalised.
type Policy struct {
	rules        []rule
	allowSpecial []netip.Prefix
}

type rule struct {
	host     string     // normalised name, or "" for an address rule
	wildcard bool       // host matches any name below it ("*.example.com")
	addr     netip.Addr // the literal address of an address rule
	port     int
}

// NewPolicy normalises the destinations of a manifest. "*.example.com"
// matches every name below example.com (not example.com itself); an address
// (IPv4 in any spelling, IPv6 with or without brackets) matches itself, and
// listing it literally is what allows a special address.
func NewPolicy(dests []sandbox.Destination, allowSpecial []netip.Prefix) (*Policy, error) {
	p := &Policy{allowSpecial: allowSpecial}
	for _, d := range dests {
		if d.Port < 1 || d.Port > 65535 {
			return nil, fmt.Errorf("%w: port %d", ErrBadHost, d.Port)
		}
		h, wild := d.Host, false
		if rest, ok := strings.CutPrefix(h, "*."); ok {
			h, wild = rest, true
		}
		norm, addr, err := NormalizeHost(h)
		if err != nil {
			return nil, err
		}
		if wild && addr.IsValid() {
			return nil, fmt.Errorf("%w: wildcard over an address %q", ErrBadHost, d.Host)
		}
		r := rule{host: norm, wildcard: wild, port: d.Port}
		if addr.IsValid() {
			r = rule{addr: addr, port: d.Port}
		}
		p.rules = append(p.rules, r)
	}
	return p, nil
}

// Ports lists the distinct allowlisted ports, in manifest order.
func (p *Policy) Ports() []int {
	var out []int
	seen := map[int]bool{}
	for _, r := range p.rules {
		if !seen[r.port] {
			seen[r.port] = true
			out = append(out, r.port)
		}
	}
	return out
}

// Names lists the exact (not wildcard) names of the allowlist.
func (p *Policy) Names() []string {
	var out []string
	for _, r := range p.rules {
		if r.host != "" && !r.wildcard {
			out = append(out, r.host)
		}
	}
	return out
}

// Target is a request that passed the allowlist.
type Target struct {
	Host string     // normalised
	Addr netip.Addr // set when Host is an address
	Port int
}

// Match checks a requested host and port against the allowlist.
func (p *Policy) Match(host string, port int) (Target, error) {
	norm, addr, err := NormalizeHost(host)
	if err != nil {
		return Target{}, err
	}
	t := Target{Host: norm, Addr: addr, Port: port}
	for _, r := range p.rules {
		if r.port != port {
			continue
		}
		switch {
		case addr.IsValid():
			if r.addr == addr {
				return t, nil
			}
		case r.wildcard:
			if strings.HasSuffix(norm, "."+r.host) {
				return t, nil
			}
		case r.host == norm:
			return t, nil
		}
	}
	return Target{}, fmt.Errorf("%w: %s port %d", ErrNotAllowed, norm, port)
}

// Addresses checks what a target's name resolved to: every answer must be
// outside the special ranges (or in one the operator allows), otherwise the
// whole name is refused — a mix is the signature of a rebinding attack. An
// address target listed literally is allowed as is.
func (p *Policy) Addresses(t Target, resolved []netip.Addr) ([]netip.Addr, error) {
	if t.Addr.IsValid() {
		return []netip.Addr{t.Addr}, nil
	}
	if len(resolved) == 0 {
		return nil, fmt.Errorf("%w: %s has no address", ErrResolve, t.Host)
	}
	out := make([]netip.Addr, 0, len(resolved))
	for _, a := range resolved {
		a = a.Unmap()
		if Special(a) && !p.allowed(a) {
			return nil, fmt.Errorf("%w: %s resolved to %s", ErrSpecialAddr, t.Host, a)
		}
		out = append(out, a)
	}
	return out, nil
}

func (p *Policy) allowed(a netip.Addr) bool {
	for _, pre := range p.allowSpecial {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}
