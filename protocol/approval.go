package protocol

import "crypto/ed25519"

// Approval is a human or governance decision on one intent, signed with the
// approver's Ed25519 key and bound to the intent's id, payload hash and tenant.
type Approval struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	IntentID    string `json:"intent_id"`
	PayloadHash string `json:"payload_hash"`
	Tenant      string `json:"tenant"`
	Approver    string `json:"approver"`
	Decision    string `json:"decision"`
	Nonce       string `json:"nonce"`
	IssuedAt    string `json:"issued_at"`
	ExpiresAt   string `json:"expires_at"`
	KeyID       string `json:"key_id"`
	Sig         string `json:"sig,omitzero"`
}

// The decisions an approval can carry.
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
)

func (*Approval) kind() Kind { return KindApproval }

func (a *Approval) validate() error {
	if err := checkType(KindApproval, a.Type); err != nil {
		return err
	}
	for _, f := range [...]struct{ name, value string }{
		{"id", a.ID}, {"intent_id", a.IntentID}, {"tenant", a.Tenant}, {"key_id", a.KeyID},
	} {
		if err := checkID(f.name, f.value); err != nil {
			return err
		}
	}
	if err := checkHash("payload_hash", a.PayloadHash); err != nil {
		return err
	}
	if err := checkName("approver", a.Approver); err != nil {
		return err
	}
	if a.Decision != DecisionApprove && a.Decision != DecisionDeny {
		return malformed(`decision must be "approve" or "deny"`)
	}
	if err := checkNonce(a.Nonce); err != nil {
		return err
	}
	_, _, err := checkTimes(a.IssuedAt, a.ExpiresAt)
	return err
}

// DecodeApproval strictly decodes and structurally checks an approval. It does
// not authenticate it: use Verifier.VerifyApproval for that.
func DecodeApproval(data []byte, limit int) (*Approval, error) {
	a := new(Approval)
	if _, err := decodeSigned(data, limit, a); err != nil {
		return nil, err
	}
	return a, nil
}

// Sign fills Sig with the Ed25519 signature of the approval's signing input.
func (a *Approval) Sign(priv ed25519.PrivateKey) error {
	a.Sig = ""
	sig, err := signEd25519(a, priv)
	a.Sig = sig
	return err
}

// signEd25519 signs v's signing input; v's Sig must be empty.
func signEd25519(v signable, priv ed25519.PrivateKey) (string, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return "", malformed("Ed25519 private key must be %d bytes", ed25519.PrivateKeySize)
	}
	so, err := marshalSigned(v)
	if err != nil {
		return "", err
	}
	return Ed25519Sign(priv, so.signingInput(v.kind())), nil
}
