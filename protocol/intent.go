package protocol

import (
	"github.com/go-json-experiment/json/jsontext"
)

// Intent is a proposed tool call, signed by an orchestrator with HMAC-SHA256.
//
// The fields of Intent and Target are declared in the order RFC 8785 sorts
// their names, so that encoding an intent writes canonical JSON (map keys
// sorted, as a deterministic encoding does), which a server then takes as it
// is instead of canonicalizing it again (TestSignedTypesEncodeCanonical).
type Intent struct {
	Context        jsontext.Value `json:"context,omitzero"`
	ExpiresAt      string         `json:"expires_at"`
	ID             string         `json:"id"`
	IdempotencyKey string         `json:"idempotency_key"`
	IssuedAt       string         `json:"issued_at"`
	KeyID          string         `json:"key_id"`
	Params         jsontext.Value `json:"params"`
	PayloadHash    string         `json:"payload_hash"`
	Principal      string         `json:"principal"`
	RunID          string         `json:"run_id"`
	Sig            string         `json:"sig,omitzero"`
	Target         *Target        `json:"target,omitzero"`
	Tenant         string         `json:"tenant"`
	Tool           string         `json:"tool"`
	Type           string         `json:"type"`
}

// Target narrows where an intent may run: one node, or nodes with all the labels.
type Target struct {
	Labels map[string]string `json:"labels,omitzero"`
	Node   string            `json:"node,omitzero"`
}

func (*Intent) kind() Kind { return KindIntent }

func (in *Intent) validate() error {
	if err := checkType(KindIntent, in.Type); err != nil {
		return err
	}
	if err := checkID("id", in.ID); err != nil {
		return err
	}
	if err := checkID("tenant", in.Tenant); err != nil {
		return err
	}
	for _, f := range [...]struct{ name, value string }{
		{"principal", in.Principal}, {"run_id", in.RunID}, {"tool", in.Tool},
	} {
		if err := checkName(f.name, f.value); err != nil {
			return err
		}
	}
	if in.Params.Kind() != '{' {
		return malformed("params must be a JSON object")
	}
	if err := checkHash("payload_hash", in.PayloadHash); err != nil {
		return err
	}
	if !validName(in.IdempotencyKey, MaxIdempotencyKeyLen) {
		return malformed("idempotency_key must be 1-%d characters without control characters", MaxIdempotencyKeyLen)
	}
	if _, _, err := checkTimes(in.IssuedAt, in.ExpiresAt); err != nil {
		return err
	}
	if in.Target != nil {
		if err := in.Target.validate(); err != nil {
			return err
		}
	}
	if in.Context != nil && in.Context.Kind() != '{' {
		return malformed("context must be a JSON object")
	}
	return checkID("key_id", in.KeyID)
}

func (t *Target) validate() error {
	switch {
	case t.Node != "" && t.Labels == nil:
		return checkID("target.node", t.Node)
	case t.Node == "" && len(t.Labels) > 0:
		for k, v := range t.Labels {
			if err := checkName("target label name", k); err != nil {
				return err
			}
			if err := checkName("target label value", v); err != nil {
				return err
			}
		}
		return nil
	}
	return malformed(`target must be {"node": id} or {"labels": {…}} with at least one label`)
}

// DecodeIntent strictly decodes and structurally checks an intent. It does not
// authenticate it: use Verifier.VerifyIntent for that.
func DecodeIntent(data []byte, limit int) (*Intent, error) {
	in := new(Intent)
	if _, err := decodeSigned(data, limit, in); err != nil {
		return nil, err
	}
	return in, nil
}

// SetPayloadHash fills PayloadHash from Tool and Params.
func (in *Intent) SetPayloadHash() error {
	h, err := PayloadHash(in.Tool, in.Params)
	if err != nil {
		return err
	}
	in.PayloadHash = h
	return nil
}

// Sign fills Sig with the HMAC-SHA256 of the intent's signing input. KeyID must
// already name the key.
func (in *Intent) Sign(secret []byte) error {
	in.Sig = ""
	so, err := marshalSigned(in)
	if err != nil {
		return err
	}
	in.Sig = HMACSign(secret, so.signingInput(KindIntent))
	return nil
}
