package protocol

import "crypto/ed25519"

// Result is a node's signed report of one run of one dispatch.
//
// Two versions share this struct, told apart by Type. A writ.result/v2
// (ResultTypeV2, what nodes sign) commits to the tool's output by hash and
// size only: OutputHash and OutputBytes cover everything the tool wrote,
// CapturedHash and CapturedBytes what the node kept and sent beside the
// result, and Output is empty. A writ.result/v1 (ResultTypeV1) carries the
// captured output itself in Output; it is still verified, never signed by a
// node any more. Members are added at the end, omitted when zero, so that
// objects without them keep their signing input.
type Result struct {
	Type       string `json:"type"`
	DispatchID string `json:"dispatch_id"`
	IntentID   string `json:"intent_id"`
	Node       string `json:"node"`
	Status     string `json:"status"`
	ExitCode   int    `json:"exit_code"`
	// Output is the captured output, capped, in version 1 only. When the
	// tool wrote bytes that are not UTF-8, Output is their standard base64
	// and OutputEncoding is "base64".
	Output         string `json:"output,omitzero"`
	OutputEncoding string `json:"output_encoding,omitzero"`
	// OutputHash and OutputBytes are the hash and size of everything the
	// tool wrote, before any cap.
	OutputHash  string `json:"output_hash"`
	OutputBytes int64  `json:"output_bytes"`
	// CapturedHash and CapturedBytes (version 2, required there) are the
	// hash and size of the bytes the node kept: the output a reader is
	// served. They equal OutputHash and OutputBytes unless Truncated.
	CapturedHash  string `json:"captured_hash,omitzero"`
	CapturedBytes *int64 `json:"captured_bytes,omitzero"`
	Truncated     bool   `json:"truncated"`
	Sandbox       string `json:"sandbox"`
	// Error says why a run was refused or failed before the tool ran.
	Error      string `json:"error,omitzero"`
	StartedAt  string `json:"started_at"`
	FinishedAt string `json:"finished_at"`
	KeyID      string `json:"key_id"`
	Sig        string `json:"sig,omitzero"`
	// Egress and Attest: result_attest.go.
	Egress *ResultEgress `json:"egress,omitzero"`
	Attest *ResultAttest `json:"attest,omitzero"`
	// MCP names the MCP server and tool of a run of the mcp tier
	// (result_mcp.go).
	MCP *ResultMCP `json:"mcp,omitzero"`
}

// The types of results: version 1 carries the captured output, version 2
// only its hashes. Both are signed with the prefix KindResult.Prefix().
const (
	ResultTypeV1 = "writ.result/v1"
	ResultTypeV2 = "writ.result/v2"
)

// MaxCapturedBytes bounds the output a node keeps and sends beside a v2
// result (captured_bytes), whatever the tool's output limit: every server
// keeps it in memory until its retention passes. output_hash and
// output_bytes still cover everything the tool wrote.
const MaxCapturedBytes = 128 << 10

// The statuses a result can carry.
const (
	StatusOK          = "ok"
	StatusError       = "error"
	StatusTimeout     = "timeout"
	StatusOutputLimit = "output_limit"
	StatusDiskLimit   = "disk_limit"
	StatusRefused     = "refused"
	// StatusUnknown is a node's report that it started a dispatch and cannot
	// say how it ended (it crashed or restarted during the run). The tool is
	// never run again. An extension of PROTOCOL.md §4's list.
	StatusUnknown = "unknown"
	// StatusCanceled is a node's report that it stopped the tool, or never
	// started it, because the control plane canceled the dispatch
	// (FrameCancel). Another extension of PROTOCOL.md §4's list.
	StatusCanceled = "canceled"
)

func (*Result) kind() Kind { return KindResult }

// Version returns 1 or 2 for a result of a known type, 0 otherwise.
func (r *Result) Version() int {
	switch r.Type {
	case ResultTypeV1:
		return 1
	case ResultTypeV2:
		return 2
	}
	return 0
}

func (r *Result) validate() error {
	if r.Version() == 0 {
		return malformed("type must be %q or %q", ResultTypeV2, ResultTypeV1)
	}
	for _, f := range [...]struct{ name, value string }{
		{"dispatch_id", r.DispatchID}, {"intent_id", r.IntentID}, {"node", r.Node}, {"key_id", r.KeyID},
	} {
		if err := checkID(f.name, f.value); err != nil {
			return err
		}
	}
	switch r.Status {
	case StatusOK, StatusError, StatusTimeout, StatusOutputLimit, StatusDiskLimit, StatusRefused, StatusUnknown, StatusCanceled:
	default:
		return malformed("status must be one of ok, error, timeout, output_limit, disk_limit, refused, unknown, canceled")
	}
	if r.Sandbox != "" {
		if err := checkID("sandbox", r.Sandbox); err != nil {
			return err
		}
	} else if r.Status != StatusRefused && r.Status != StatusUnknown && r.Status != StatusCanceled {
		return malformed("sandbox must name the tier that ran the tool")
	}
	if err := checkHash("output_hash", r.OutputHash); err != nil {
		return err
	}
	if r.OutputBytes < 0 {
		return malformed("output_bytes must not be negative")
	}
	var err error
	if r.Version() == 1 {
		err = r.validateV1()
	} else {
		err = r.validateV2()
	}
	if err != nil {
		return err
	}
	started, err := ParseTime(r.StartedAt)
	if err != nil {
		return malformed("started_at: %s", err.(*Error).Message)
	}
	finished, err := ParseTime(r.FinishedAt)
	if err != nil {
		return malformed("finished_at: %s", err.(*Error).Message)
	}
	if finished.Before(started) {
		return malformed("finished_at must not be before started_at")
	}
	if err := r.validateAttest(); err != nil {
		return err
	}
	return r.validateMCP()
}

func (r *Result) validateV1() error {
	if r.OutputEncoding != "" && r.OutputEncoding != "base64" {
		return malformed(`output_encoding must be "base64" when present`)
	}
	if r.CapturedHash != "" || r.CapturedBytes != nil {
		return malformed("captured_hash and captured_bytes are members of %s only", ResultTypeV2)
	}
	return nil
}

// validateV2 checks what a version-2 result says about its output: no text,
// both hashes, and sizes that agree with truncated.
func (r *Result) validateV2() error {
	if r.Output != "" || r.OutputEncoding != "" {
		return malformed("a %s carries no output or output_encoding", ResultTypeV2)
	}
	if err := checkHash("captured_hash", r.CapturedHash); err != nil {
		return err
	}
	switch n := r.CapturedBytes; {
	case n == nil:
		return malformed("captured_bytes is required")
	case *n < 0:
		return malformed("captured_bytes must not be negative")
	case *n > r.OutputBytes:
		return malformed("captured_bytes must not exceed output_bytes")
	case *n > MaxCapturedBytes:
		return malformed("captured_bytes must not exceed %d", MaxCapturedBytes)
	case !r.Truncated && (*n != r.OutputBytes || r.CapturedHash != r.OutputHash):
		return malformed("an output not truncated must have captured_hash = output_hash and captured_bytes = output_bytes")
	case *n < r.OutputBytes && !r.Truncated:
		return malformed("captured_bytes under output_bytes must be truncated")
	}
	return nil
}

// DecodeResult strictly decodes and structurally checks a result. It does not
// authenticate it: use Verifier.VerifyResult for that.
func DecodeResult(data []byte, limit int) (*Result, error) {
	r := new(Result)
	if _, err := decodeSigned(data, limit, r); err != nil {
		return nil, err
	}
	return r, nil
}

// Sign fills Sig with the Ed25519 signature of the result's signing input.
func (r *Result) Sign(priv ed25519.PrivateKey) error {
	r.Sig = ""
	sig, err := signEd25519(r, priv)
	r.Sig = sig
	return err
}
