package sandboxtest

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// DNSServer serves the A records of names (fully qualified, "api.test.")
// on a UDP port of the host's loopback until the test ends, and returns a
// real Go resolver that asks only it. Unknown names get NXDOMAIN. Tests
// use it to make names resolve to loopback or to private addresses without
// touching the host's resolver.
func DNSServer(t testing.TB, names map[string]netip.Addr) *net.Resolver {
	t.Helper()
	return DNSServerFunc(t, func(name string) []netip.Addr {
		if a, ok := names[name]; ok {
			return []netip.Addr{a}
		}
		return nil
	})
}

// DNSServerFunc is DNSServer with the A records of each query decided by
// answer (nil: NXDOMAIN), so that a test can change them between queries
// (DNS rebinding) or give several.
func DNSServerFunc(t testing.TB, answer func(name string) []netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp, ok := reply(buf[:n], answer); ok {
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	addr := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp4", addr)
	}}
}

// reply builds the response to one query: for an A query the records
// answer gives, NXDOMAIN when it gives none; for any other type an empty
// answer (Go's resolver then uses the A records). Only what Go's resolver
// sends is understood: one question, uncompressed.
func reply(req []byte, answer func(string) []netip.Addr) ([]byte, bool) {
	if len(req) < 12 || binary.BigEndian.Uint16(req[4:6]) != 1 {
		return nil, false
	}
	var labels []string
	i := 12
	for i < len(req) && req[i] != 0 {
		n := int(req[i])
		if n > 63 || i+1+n > len(req) {
			return nil, false
		}
		labels = append(labels, strings.ToLower(string(req[i+1:i+1+n])))
		i += 1 + n
	}
	if i+5 > len(req) {
		return nil, false
	}
	qtype := binary.BigEndian.Uint16(req[i+1 : i+3])
	question := req[12 : i+5]
	flags := uint16(0x8580) // response, authoritative, recursion desired and available
	var records []netip.Addr
	if qtype == 1 {
		for _, a := range answer(strings.Join(labels, ".") + ".") {
			if a.Is4() {
				records = append(records, a)
			}
		}
		if len(records) == 0 {
			flags |= 3 // NXDOMAIN
		}
	}
	out := append([]byte{}, req[:2]...)
	out = binary.BigEndian.AppendUint16(out, flags)
	out = binary.BigEndian.AppendUint16(out, 1)
	out = binary.BigEndian.AppendUint16(out, uint16(len(records)))
	out = append(out, 0, 0, 0, 0)
	out = append(out, question...)
	for _, a := range records {
		ip := a.As4()
		out = append(out, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4)
		out = append(out, ip[:]...)
	}
	return out, true
}
