// Package protocol is the single implementation of Writ's wire format, protocol v1:
// the signed objects (intent, approval, dispatch, result), the receipt and the
// checkpoint body, RFC 8785 canonical JSON, payload hashes, domain-separated signing,
// and a Verifier that reports the stable error codes in the order the protocol gives.
//
// The package is pure: it performs no I/O and reads the clock only through the
// function it is given. Every byte that is hashed or signed is canonical JSON
// computed from what was received, never the bytes as received.
package protocol
