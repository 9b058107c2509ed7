package protocol

import "crypto/ed25519"

// Result is a node's signed report of one run of one dispatch.
type Result struct {
	Type       string `json:"type"`
	DispatchID string `json:"dispatch_id"`
	IntentID   string `json:"intent_id"`
	Node       string `json:"node"`
	Status     string `json:"status"`
	ExitCode   int    `json:"exit_code"`
	// Output is the captured output, capped. When the tool wrote bytes that are
	// not UTF-8, Output is their standard base64 and OutputEncoding is "base64".
	Output         string `json:"output"`
	OutputEncoding string `json:"output_encoding,omitzero"`
	OutputHash     string `json:"output_hash"`
	OutputBytes    int64  `json:"output_bytes"`
	Truncated      bool   `json:"truncated"`
	Sandbox        string `json:"sandbox"`
	// Error says why a run was refused or failed before the tool ran.
	Error      string `json:"error,omitzero"`
	StartedAt  string `json:"started_at"`
	FinishedAt string `json:"finished_at"`
	KeyID      string `json:"key_id"`
	Sig        string `json:"sig,omitzero"`
}

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
)

func (*Result) kind() Kind { return KindResult }

func (r *Result) validate() error {
	if err := checkType(KindResult, r.Type); err != nil {
		return err
	}
	for _, f := range [...]struct{ name, value string }{
		{"dispatch_id", r.DispatchID}, {"intent_id", r.IntentID}, {"node", r.Node}, {"key_id", r.KeyID},
	} {
		if err := checkID(f.name, f.value); err != nil {
			return err
		}
	}
	switch r.Status {
	case StatusOK, StatusError, StatusTimeout, StatusOutputLimit, StatusDiskLimit, StatusRefused, StatusUnknown:
	default:
		return malformed("status must be one of ok, error, timeout, output_limit, refused, unknown")
	}
	if r.Sandbox != "" {
		if err := checkID("sandbox", r.Sandbox); err != nil {
			return err
		}
	} else if r.Status != StatusRefused && r.Status != StatusUnknown {
		return malformed("sandbox must name the tier that ran the tool")
	}
	if r.OutputEncoding != "" && r.OutputEncoding != "base64" {
		return malformed(`output_encoding must be "base64" when present`)
	}
	if err := checkHash("output_hash", r.OutputHash); err != nil {
		return err
	}
	if r.OutputBytes < 0 {
		return malformed("output_bytes must not be negative")
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
