package controlplane

import (
	jsonv2 "github.com/go-json-experiment/json"

	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/web"
)

// resultInfo is a recorded signed result as the intent page shows it: how
// the tool ended, the digest of what ran, and the egress audit; nil when
// raw does not decode.
func resultInfo(raw []byte) *web.ResultInfo {
	var r protocol.Result
	if err := jsonv2.Unmarshal(raw, &r); err != nil {
		return nil
	}
	info := &web.ResultInfo{Status: r.Status, Sandbox: r.Sandbox, Output: r.Output, StartedAt: r.StartedAt,
		FinishedAt: r.FinishedAt, ExitCode: r.ExitCode, OutputBytes: r.OutputBytes, Truncated: r.Truncated}
	if r.Attest != nil {
		info.ExecDigest = r.Attest.ExecDigest
	}
	if e := r.Egress; e != nil {
		info.Egress = &web.EgressInfo{Allowed: e.Allowed, Refused: e.Refused, BytesUp: e.BytesUp, BytesDown: e.BytesDown}
		for _, x := range e.Entries {
			info.Egress.Entries = append(info.Egress.Entries, web.EgressRow{Host: x.Host, Via: x.Via,
				Reason: x.Reason, Port: x.Port, Allowed: x.Allowed, BytesUp: x.BytesUp, BytesDown: x.BytesDown})
		}
	}
	return info
}
