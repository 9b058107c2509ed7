package egress

import (
	"encoding/binary"
	"fmt"
)

// maxRecord is the largest TLS plaintext record (2^14) plus its header.
const maxRecord = 5 + 16384

// RecordLen returns the length of the TLS record that starts hdr (at
// least 5 bytes), header included, or an error if hdr does not start a
// handshake record.
func RecordLen(hdr []byte) (int, error) {
	if len(hdr) < 5 || hdr[0] != 0x16 || hdr[1] != 3 {
		return 0, fmt.Errorf("%w: not a TLS handshake record", ErrBadRequest)
	}
	n := int(binary.BigEndian.Uint16(hdr[3:5]))
	if n == 0 || n > maxRecord-5 {
		return 0, fmt.Errorf("%w: TLS record length %d", ErrBadRequest, n)
	}
	return 5 + n, nil
}

// ServerName returns the host_name of the server_name extension of the
// TLS ClientHello in record (one whole handshake record, header included).
// The ClientHello must fit in that first record, as every client's does in
// practice; one without SNI, or malformed in any way, is an error wrapping
// ErrBadRequest.
func ServerName(record []byte) (string, error) {
	bad := func(why string) (string, error) { return "", fmt.Errorf("%w: ClientHello: %s", ErrBadRequest, why) }
	n, err := RecordLen(record)
	if err != nil {
		return "", err
	}
	if len(record) != n {
		return bad("record length mismatch")
	}
	p := parser(record[5:])
	typ, ok := p.u8()
	if !ok || typ != 1 {
		return bad("not a ClientHello")
	}
	body, ok := p.vec(3)
	if !ok || len(p) != 0 {
		return bad("handshake spans more than one record")
	}
	b := parser(body)
	if _, ok := b.bytes(2 + 32); !ok { // legacy_version, random
		return bad("truncated")
	}
	for _, w := range []int{1, 2, 1} { // session id, cipher suites, compression
		if _, ok := b.vec(w); !ok {
			return bad("truncated")
		}
	}
	exts, ok := b.vec(2)
	if !ok || len(b) != 0 {
		return bad("bad extensions")
	}
	e := parser(exts)
	for len(e) > 0 {
		typ, ok1 := e.u16()
		data, ok2 := e.vec(2)
		if !ok1 || !ok2 {
			return bad("bad extension")
		}
		if typ != 0 {
			continue
		}
		d := parser(data)
		list, ok := d.vec(2)
		if !ok || len(d) != 0 {
			return bad("bad server_name")
		}
		l := parser(list)
		for len(l) > 0 {
			nt, ok1 := l.u8()
			name, ok2 := l.vec(2)
			if !ok1 || !ok2 {
				return bad("bad server_name entry")
			}
			if nt == 0 {
				if len(name) == 0 {
					return bad("empty host_name")
				}
				return string(name), nil
			}
		}
		return bad("server_name without host_name")
	}
	return "", ErrNoServerName
}

// ErrNoServerName is ServerName's error for a well-formed ClientHello that
// names no server.
var ErrNoServerName = fmt.Errorf("%w: ClientHello: no server_name extension", ErrBadRequest)

// parser reads big-endian TLS vectors off the front of a byte slice.
type parser []byte

func (p *parser) bytes(n int) ([]byte, bool) {
	if n < 0 || len(*p) < n {
		return nil, false
	}
	b := (*p)[:n]
	*p = (*p)[n:]
	return b, true
}

func (p *parser) u8() (byte, bool) {
	b, ok := p.bytes(1)
	if !ok {
		return 0, false
	}
	return b[0], true
}

func (p *parser) u16() (uint16, bool) {
	b, ok := p.bytes(2)
	if !ok {
		return 0, false
	}
	return binary.BigEndian.Uint16(b), true
}

// vec reads a vector whose length prefix is w bytes wide.
func (p *parser) vec(w int) ([]byte, bool) {
	lb, ok := p.bytes(w)
	if !ok {
		return nil, false
	}
	n := 0
	for _, c := range lb {
		n = n<<8 | int(c)
	}
	return p.bytes(n)
}
