package protocol

import (
	"crypto/ed25519"

	"github.com/go-json-experiment/json/jsontext"
)

// Dispatch is the control plane's signed order to one node to run one intent.
//
// The fields of Dispatch and Limits are declared in the order RFC 8785 sorts
// their names, so that encoding one writes canonical JSON, which signing then
// takes as it is instead of canonicalizing it again
// (TestSignedTypesEncodeCanonical).
type Dispatch struct {
	ExpiresAt        string         `json:"expires_at"`
	Fence            uint64         `json:"fence"`
	ID               string         `json:"id"`
	IntentID         string         `json:"intent_id"`
	IssuedAt         string         `json:"issued_at"`
	KeyID            string         `json:"key_id"`
	Limits           Limits         `json:"limits"`
	Node             string         `json:"node"`
	Nonce            string         `json:"nonce"`
	Params           jsontext.Value `json:"params"`
	PayloadHash      string         `json:"payload_hash"`
	Sandbox          string         `json:"sandbox"`
	Sig              string         `json:"sig,omitzero"`
	Tool             string         `json:"tool"`
	ToolManifestHash string         `json:"tool_manifest_hash"`
	Type             string         `json:"type"`
}

// Limits are the resource limits a node must apply to one run. Zero means the
// tool manifest's own limit applies.
type Limits struct {
	CPUMS       int64 `json:"cpu_ms,omitzero"`
	MemoryBytes int64 `json:"memory_bytes,omitzero"`
	OutputBytes int64 `json:"output_bytes,omitzero"`
	Pids        int64 `json:"pids,omitzero"`
	TimeoutMS   int64 `json:"timeout_ms,omitzero"`
}

func (*Dispatch) kind() Kind { return KindDispatch }

func (d *Dispatch) validate() error {
	if err := checkType(KindDispatch, d.Type); err != nil {
		return err
	}
	for _, f := range [...]struct{ name, value string }{
		{"id", d.ID}, {"intent_id", d.IntentID}, {"node", d.Node}, {"key_id", d.KeyID}, {"sandbox", d.Sandbox},
	} {
		if err := checkID(f.name, f.value); err != nil {
			return err
		}
	}
	if err := checkName("tool", d.Tool); err != nil {
		return err
	}
	if err := checkHash("tool_manifest_hash", d.ToolManifestHash); err != nil {
		return err
	}
	if d.Params.Kind() != '{' {
		return malformed("params must be a JSON object")
	}
	if err := checkHash("payload_hash", d.PayloadHash); err != nil {
		return err
	}
	if err := d.Limits.validate(); err != nil {
		return err
	}
	if err := checkNonce(d.Nonce); err != nil {
		return err
	}
	if d.Fence == 0 {
		return malformed("fence must be the Raft index that committed the dispatch")
	}
	_, _, err := checkTimes(d.IssuedAt, d.ExpiresAt)
	return err
}

func (l Limits) validate() error {
	if l.TimeoutMS < 0 || l.MemoryBytes < 0 || l.OutputBytes < 0 || l.CPUMS < 0 || l.Pids < 0 {
		return malformed("limits must not be negative")
	}
	return nil
}

// DecodeDispatch strictly decodes and structurally checks a dispatch. It does
// not authenticate it: use Verifier.VerifyDispatch for that.
func DecodeDispatch(data []byte, limit int) (*Dispatch, error) {
	d := new(Dispatch)
	if _, err := decodeSigned(data, limit, d); err != nil {
		return nil, err
	}
	return d, nil
}

// Sign fills Sig with the Ed25519 signature of the dispatch's signing input.
func (d *Dispatch) Sign(priv ed25519.PrivateKey) error {
	d.Sig = ""
	sig, err := signEd25519(d, priv)
	d.Sig = sig
	return err
}
