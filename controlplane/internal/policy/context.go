package policy

import (
	cedar "github.com/cedar-policy/cedar-go"
	"github.com/writhq/writ/protocol"
)

// intentContext is the context both actions share (docs/policy.md,
// "Context"). Every member is always present, as an empty string, set or
// record when the intent has nothing to put there, so that a policy reading
// one never fails on a missing attribute.
func intentContext(in *protocol.Intent, tool Tool) (cedar.RecordMap, error) {
	var c converter
	params, err := c.object(in.Params)
	if err != nil {
		return nil, err
	}
	extra := cedar.Record{}
	if len(in.Context) > 0 {
		if extra, err = c.object(in.Context); err != nil {
			return nil, err
		}
	}
	node, labels := "", cedar.RecordMap{}
	if in.Target != nil {
		node = in.Target.Node
		for k, v := range in.Target.Labels {
			labels[cedar.String(k)] = cedar.String(v)
		}
	}
	return cedar.RecordMap{
		"intent_id":      cedar.String(in.ID),
		"tenant":         cedar.String(in.Tenant),
		"run_id":         cedar.String(in.RunID),
		"capabilities":   stringSet(tool.Capabilities),
		"params":         params,
		"channel":        stringMember(extra, "channel"),
		"device":         stringMember(extra, "device"),
		"node":           cedar.String(node),
		"labels":         cedar.NewRecord(labels),
		"intent_context": extra,
	}, nil
}

// stringMember is r[name] when that is a string, and "" otherwise: channel
// and device are promised to policy as strings.
func stringMember(r cedar.Record, name cedar.String) cedar.String {
	if v, ok := r.Get(name); ok {
		if s, ok := v.(cedar.String); ok {
			return s
		}
	}
	return ""
}
