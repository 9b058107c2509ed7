package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"
)

// DefaultFailover is how long a request keeps trying other servers, through
// a leader election, before it gives up.
const DefaultFailover = 15 * time.Second

// splitAddrs turns "a,b,c" into server base URLs without trailing slashes.
func splitAddrs(addrs []string) []string {
	var out []string
	for _, a := range addrs {
		for _, p := range strings.Split(a, ",") {
			if p = strings.TrimRight(strings.TrimSpace(p), "/"); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// resendable reports whether a request may be sent again after it may have
// reached a server: reads, PUT and DELETE (which set a state, so a second
// one changes nothing), and intent submissions, which are idempotent by
// their idempotency key — the same signed intent sent twice is admitted at
// most once, and the second answer is the first intent's. An approval is not
// resent: a second one that found its nonce consumed would answer
// approval_replayed, hiding the first outcome.
func resendable(method, path string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete:
		return true
	case http.MethodPost:
		return path == "/v1/intents" || strings.HasPrefix(path, "/v1/intents?") || cancelPath(path)
	}
	return false
}

// refused reports whether err means no connection could be made to the
// server at all (nothing listens there, or no route to it), as opposed to a
// connection the server closed before the request was written (a server at
// capacity sheds handshakes that way), which is worth trying again.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// misconfigured reports whether err is a failure that sending again cannot
// mend: the TLS handshake failed on certificates or protocol (a CA the
// client does not trust, another name, a plain-HTTP server at an https
// address, the server refusing the handshake with an alert).
func misconfigured(err error) bool {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
		alert    tls.AlertError
	)
	return errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verify) || errors.As(err, &record) || errors.As(err, &alert) ||
		// net/http's own words for a RecordHeaderError it recognises as
		// plain HTTP, which it does not wrap.
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// backoff is the pause after every server of the list failed once.
func backoff(round int) time.Duration {
	d := 100 * time.Millisecond << min(round, 4)
	return min(d, time.Second)
}

// cancelPath reports whether path is a cancel (cancel.go): a POST that is
// signed like a read and, being idempotent, safe to send again.
func cancelPath(path string) bool {
	p, _, _ := strings.Cut(path, "?")
	return strings.HasSuffix(p, "/cancel") && (strings.HasPrefix(p, "/v1/intents/") || strings.HasPrefix(p, "/v1/tenants/"))
}
