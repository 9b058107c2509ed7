package egress

import (
	"strings"
	"unicode/utf8"

	"github.com/writhq/writ/sandbox"
)

// maxAuditHost bounds a host name in the audit (a DNS name has at most
// 253 characters; what is longer was not one).
const maxAuditHost = 253

// Audit returns the session's record for the run's result: the first
// sandbox.MaxEgressEntries decisions, and counts and byte totals over all
// of them. Call it after Close for the final byte counts.
func (s *Session) Audit() *sandbox.EgressAudit {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := &sandbox.EgressAudit{Entries: []sandbox.EgressEntry{}, Allowed: s.allowed, Refused: s.refused,
		BytesUp: s.up, BytesDown: s.down}
	for _, d := range s.decisions[:min(len(s.decisions), sandbox.MaxEgressEntries)] {
		a.Entries = append(a.Entries, sandbox.EgressEntry{Host: auditHost(d.Host), Port: d.Port, Via: d.Via,
			Allowed: d.Code == "", Reason: d.Code, BytesUp: d.Up, BytesDown: d.Down})
	}
	return a
}

// auditHost is h as the tool sent it, cut to maxAuditHost bytes, with
// "?" for invalid UTF-8 and control characters, so that a signed result
// can carry it.
func auditHost(h string) string {
	if len(h) > maxAuditHost {
		h = h[:maxAuditHost]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) || r == utf8.RuneError {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(h, "?"))
}
