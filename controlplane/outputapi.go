package controlplane

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/protocol"
)

// A tool's output is served only on a read the server authenticated as the
// intent's tenant (a signed read) or an admin: GET /v1/intents/{id} with
// the output beside the result, and GET /v1/intents/{id}/output. Answers to
// a submission or an approval never carry it: a signed intent can be
// replayed by whoever saw it, a signed read is fresh.

// answerEntitled is answer for a reader entitled to the intent's tenant.
func (ep intentsAPI) answerEntitled(w http.ResponseWriter, r *http.Request, id string, wait time.Duration) {
	ep.srv.respond(w, r, id, wait, true)
}

// attachOutput adds the intent's stored output to its response, when its
// result is a writ.result/v2 and the output is still kept and matches it.
func (ep intentsAPI) attachOutput(resp *protocol.IntentResponse, in fsm.Intent) {
	res, data, ok := ep.intentOutput(in)
	if !ok || res.Version() != 2 {
		return // a v1 result carries its output inside
	}
	text, enc := protocol.EncodeOutput(data)
	resp.Output, resp.OutputEncoding = &text, enc
}

// intentOutput returns the intent's result and the captured output it
// commits to: for a v2, from the output table, checked against
// captured_hash; for a v1 (recorded before v2), the output it carries. ok is
// false when there is no result yet or the output is no longer kept.
func (ep intentsAPI) intentOutput(in fsm.Intent) (res *protocol.Result, data []byte, ok bool) {
	if len(in.Result) == 0 {
		return nil, nil, false
	}
	res, err := protocol.DecodeResult(in.Result, 0)
	if err != nil {
		return nil, nil, false
	}
	if res.Version() == 1 {
		data, err := res.CapturedOutputV1()
		return res, data, err == nil
	}
	if *res.CapturedBytes == 0 {
		return res, []byte{}, true
	}
	o, kept := ep.srv.reads.IntentOutput(in.ID)
	if !kept || o.DispatchID != res.DispatchID || res.CheckCaptured(o.Data) != nil {
		return res, nil, false
	}
	return res, o.Data, true
}

// handleGetOutput answers GET /v1/intents/{id}/output: the captured output
// with the hashes and sizes the signed result commits to. Same access as
// handleGetIntent; not_found for another tenant's intent, for an intent
// without a v2 result yet, and for an output no longer kept.
func (ep intentsAPI) handleGetOutput(w http.ResponseWriter, r *http.Request) {
	c, aerr := ep.srv.auth().callerOf(r)
	if aerr == nil && c.kind == callerNone {
		aerr = refusal(protocol.CodeUnauthorized, "outputs are read with a read signed by the tenant's orchestrator key, an auditor token granted outputs, or the admin token")
	}
	if aerr != nil {
		ep.srv.refuse(w, r, aerr)
		return
	}
	id := r.PathValue("id")
	in, ok := ep.srv.reads.Intent(id)
	if !ok || !c.readsOutputOf(in.Tenant) {
		writeError(w, protocol.CodeNotFound, "no intent "+id)
		return
	}
	res, data, ok := ep.intentOutput(in)
	if !ok {
		writeError(w, protocol.CodeNotFound, "intent "+id+" has no output kept (no result yet, a result without stored output, or past the output retention)")
		return
	}
	text, enc := protocol.EncodeOutput(data)
	// A v1 names no captured hash: it is the hash of the output it carries.
	writeJSON(w, http.StatusOK, protocol.OutputResponse{IntentID: in.ID, DispatchID: res.DispatchID, Output: text,
		OutputEncoding: enc, OutputHash: res.OutputHash, OutputBytes: res.OutputBytes,
		CapturedHash: protocol.HashBytes(data), CapturedBytes: int64(len(data)), Truncated: res.Truncated})
}

// outputMetrics are gauges of the output table: how many outputs this
// replica keeps and their total size (at most output_max_bytes).
func outputMetrics(f fsm.Reader) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "writ_outputs_kept", Help: "Tool outputs kept beside the intents on this server.",
		}, func() float64 { n, _ := f.OutputUsage(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "writ_outputs_kept_bytes", Help: "Total size of the tool outputs kept on this server.",
		}, func() float64 { _, b := f.OutputUsage(); return float64(b) }),
	}
}
