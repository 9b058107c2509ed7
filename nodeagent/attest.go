package nodeagent

import (
	"context"
	"log/slog"

	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
)

// fillAttest writes into r what ran and what it used (attest, for a tool
// the tier started), the egress proxy's record (egress, for a tool with a
// network allowlist) and the MCP server and tool it called (mcp, for the
// mcp tier).
func fillAttest(r *protocol.Result, out sandbox.Outcome) {
	if out.ExecDigest != "" {
		u := out.Usage
		r.Attest = &protocol.ResultAttest{ExecDigest: out.ExecDigest, WallMS: u.Wall.Milliseconds(),
			CPUMS: (u.UserCPU + u.SystemCPU).Milliseconds(), MaxRSSBytes: u.MaxRSS}
	}
	if a := out.Egress; a != nil {
		e := &protocol.ResultEgress{Entries: []protocol.EgressEntry{}, Allowed: int64(a.Allowed), Refused: int64(a.Refused),
			BytesUp: a.BytesUp, BytesDown: a.BytesDown}
		for _, x := range a.Entries[:min(len(a.Entries), protocol.MaxEgressEntries)] {
			e.Entries = append(e.Entries, protocol.EgressEntry{Host: x.Host, Port: x.Port, Via: x.Via,
				Allowed: x.Allowed, Reason: x.Reason, BytesUp: x.BytesUp, BytesDown: x.BytesDown})
		}
		r.Egress = e
	}
	if c := out.MCP; c != nil {
		r.MCP = &protocol.ResultMCP{Tool: c.Tool, Server: c.Server, InnerTier: c.InnerTier}
	}
}

// logEgress logs each connection attempt of a run with an allowlist (the
// refusals as warnings: a refused attempt may be an exfiltration), then
// the counts.
func (x *Executor) logEgress(d *protocol.Dispatch, out sandbox.Outcome) {
	a := out.Egress
	if a == nil {
		return
	}
	for _, e := range a.Entries {
		level := slog.LevelInfo
		if !e.Allowed {
			level = slog.LevelWarn
		}
		x.log.Log(context.Background(), level, "egress", "dispatch", d.ID, "intent", d.IntentID, "tool", d.Tool, "host", e.Host,
			"port", e.Port, "via", e.Via, "allowed", e.Allowed, "reason", e.Reason, "bytes_up", e.BytesUp, "bytes_down", e.BytesDown)
	}
	x.log.Info("egress totals", "dispatch", d.ID, "allowed", a.Allowed, "refused", a.Refused,
		"listed", len(a.Entries), "bytes_up", a.BytesUp, "bytes_down", a.BytesDown)
}
