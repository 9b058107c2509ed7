package egress

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// maxHead bounds a CONNECT request line and headers together.
const maxHead = 8192

// ReadConnect reads an HTTP/1.x CONNECT request (request line and headers,
// at most 8 KiB together, CRLF or LF line ends) and returns the host and
// port of its authority ("host:port", "[v6]:port"). Anything else — another
// method, a missing or non-numeric port, a line too long, an end of input
// before the blank line — is an error wrapping ErrBadRequest. Headers are
// read and ignored: the proxy needs nothing from them.
func ReadConnect(r *bufio.Reader) (host string, port int, err error) {
	read := 0
	line := func() (string, error) {
		var buf []byte
		for {
			frag, err := r.ReadSlice('\n')
			read += len(frag)
			if read > maxHead {
				return "", fmt.Errorf("%w: request head over %d bytes", ErrBadRequest, maxHead)
			}
			buf = append(buf, frag...)
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil {
				return "", fmt.Errorf("%w: %v", ErrBadRequest, err)
			}
			return string(bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r"))), nil
		}
	}
	first, err := line()
	if err != nil {
		return "", 0, err
	}
	method, rest, ok1 := strings.Cut(first, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || method != "CONNECT" || (proto != "HTTP/1.1" && proto != "HTTP/1.0") {
		return "", 0, fmt.Errorf("%w: want \"CONNECT host:port HTTP/1.1\"", ErrBadRequest)
	}
	host, port, err = SplitHostPort(target)
	if err != nil {
		return "", 0, err
	}
	for {
		h, err := line()
		if err != nil {
			return "", 0, err
		}
		if h == "" {
			return host, port, nil
		}
		if !strings.Contains(h, ":") {
			return "", 0, fmt.Errorf("%w: malformed header line", ErrBadRequest)
		}
	}
}

// SplitHostPort splits an authority into host and a decimal port 1-65535.
func SplitHostPort(a string) (string, int, error) {
	i := strings.LastIndexByte(a, ':')
	if i <= 0 {
		return "", 0, fmt.Errorf("%w: authority %.80q has no port", ErrBadRequest, a)
	}
	host, ps := a[:i], a[i+1:]
	if strings.HasPrefix(host, "[") != strings.HasSuffix(host, "]") ||
		!strings.HasPrefix(host, "[") && strings.Contains(host, ":") {
		return "", 0, fmt.Errorf("%w: authority %.80q: IPv6 needs brackets", ErrBadRequest, a)
	}
	if len(ps) == 0 || len(ps) > 5 || strings.TrimLeft(ps, "0123456789") != "" {
		return "", 0, fmt.Errorf("%w: authority %.80q: bad port", ErrBadRequest, a)
	}
	port, _ := strconv.Atoi(ps)
	if port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("%w: authority %.80q: port out of range", ErrBadRequest, a)
	}
	return host, port, nil
}
