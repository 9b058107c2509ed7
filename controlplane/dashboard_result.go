package controlplane

import (
	"github.com/go-json-experiment/json"

	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/web"
)

// addAttest adds to the intent page's view of a result (nil: none) the
// digest of what ran (attest) and the egress audit, when the recorded
// result raw carries them.
func addAttest(info *web.ResultInfo, raw []byte) {
	var r protocol.Result
	if info == nil || len(raw) == 0 || json.Unmarshal(raw, &r) != nil {
		return
	}
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
}
