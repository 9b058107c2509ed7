package controlplane

import (
	"net/http"
	"time"

	"github.com/writhq/writ/protocol"
)

// authFailure reports whether a refusal is a failed authentication: the
// codes a guessing or broken client earns, counted against its source.
func authFailure(code protocol.Code) bool {
	switch code {
	case protocol.CodeMalformed, protocol.CodeUnknownKey, protocol.CodeBadSignature, protocol.CodeApprovalInvalid,
		protocol.CodeUnauthorized, protocol.CodeInvalidToken:
		return true
	}
	return false
}

// limitFailure counts a failed authentication of r's source, after the
// request was verified and failed. Within the source's budget it answers
// nothing and returns false: the caller answers the failure's own error.
// Past it, it answers 429 overloaded and returns true. That answer is held
// FailureDelay first when this server faces the client, so that each
// connection of a failing source gets at most one answer per FailureDelay:
// a flood's verification work is bounded by its connections, not by how
// fast it can send. A source holds at most FailureHeld answers at once (all
// sources maxHeldTotal); past that the answer goes at once and closes the
// connection, so that the next attempt costs the sender a new connection. A request a peer server
// forwarded is answered at once: the peer holds it for its client.
//
// Nothing here refuses a request that verifies: a valid request from the
// same address (behind the same NAT) is served as if no failure had been.
func (au auth) limitFailure(w http.ResponseWriter, r *http.Request) bool {
	src := source(r)
	au.srv.metrics.authFailures.Inc()
	if au.srv.fails.failed(src) {
		return false
	}
	au.srv.metrics.failuresLimited.Inc()
	au.srv.metrics.refused.WithLabelValues(string(protocol.CodeOverloaded)).Inc()
	if !forwardedByPeer(r) {
		if release, ok := au.srv.fails.hold(src); ok {
			t := time.NewTimer(au.srv.cfg.FailureDelay)
			select {
			case <-t.C:
			case <-r.Context().Done():
			}
			t.Stop()
			release()
		} else {
			w.Header().Set("Connection", "close")
		}
	}
	writeOverloaded(w, "too many requests from this address failed authentication")
	return true
}

// forwardedByPeer reports whether a server of the cluster forwarded r for
// its client.
func forwardedByPeer(r *http.Request) bool {
	return r.Header.Get(headerForwardedFor) != "" && fromServer(r)
}
