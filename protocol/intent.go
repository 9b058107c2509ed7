package protocol

import (
	"github.com/go-json-experiment/json/jsontext"
)

// Intent is a proposed tool call, signed by an orchestrator with HMAC-SHA256.
type Intent struct {
	Type           string         `json:"type"`
	ID             string         `json:"id"`
	Tenant         string         `json:"tenant"`
	Principal      string         `json:"principal"`
	RunID          string         `json:"run_id"`
	Tool           string         `json:"tool"`
	Params         jsontext.Value `json:"params"`
	PayloadHash    string         `json:"payload_hash"`
	IdempotencyKey string         `json:"idempotency_key"`
	IssuedAt       string         `json:"issued_at"`
	ExpiresAt      string         `json:"expires_at"`
	Target         *Target        `json:"target,omitzero"`
	Context        jsontext.Value `json:"context,omitzero"`
	KeyID          string         `json:"key_id"`
	Sig            string         `json:"sig,omitzero"`
}

// Target narrows where an intent may run: one node, or nodes with all the labels.
type Target struct {
	Node   string            `json:"node,omitzero"`
	Labels map[string]string `json:"labels,omitzero"`
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
