package mcpserver

import (
	"sync"
	"time"
)

// MetaControlPlaneTime is the _meta member, given only with
// Config.ReportControlPlaneTime, that holds how long a call's requests to
// the control plane were in flight, in nanoseconds: what writ bench mcp
// takes out of a tools/call's latency to leave the MCP layer's own time.
const MetaControlPlaneTime = "writ/control_plane_ns"

// cpTime measures the wall time during which at least one of one call's
// requests to the control plane is in flight; requests made at the same
// time (the output and the receipt) count once. A nil *cpTime measures
// nothing. Safe for concurrent use.
type cpTime struct {
	mu       sync.Mutex
	inFlight int
	since    time.Time
	total    time.Duration
	now      func() time.Time // time.Now when nil
}

func (t *cpTime) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

// begin marks a request sent; the func it returns marks it answered.
func (t *cpTime) begin() func() {
	if t == nil {
		return func() {}
	}
	t.mu.Lock()
	if t.inFlight == 0 {
		t.since = t.clock()
	}
	t.inFlight++
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		if t.inFlight--; t.inFlight == 0 {
			t.total += t.clock().Sub(t.since)
		}
		t.mu.Unlock()
	}
}

// Total is the time measured so far, with requests still in flight
// counted up to now.
func (t *cpTime) Total() time.Duration {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inFlight > 0 {
		return t.total + t.clock().Sub(t.since)
	}
	return t.total
}
