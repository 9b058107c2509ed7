package controlplane

import (
	"crypto/ed25519"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/keyring"
	"github.com/writhq/writ/protocol"
)

// sealContext binds a sealed secret to its tenant and key id.
func sealContext(tenant, keyID string) string { return "intent-key\x00" + tenant + "\x00" + keyID }

// intentKeys opens orchestrator secrets from the FSM with the keyring.
type intentKeys struct {
	f  fsm.Reader
	kr *keyring.Keyring
}

func (k intentKeys) IntentKey(tenant, keyID string) ([]byte, bool) {
	sealed, ok := k.f.IntentKey(tenant, keyID)
	if !ok {
		return nil, false
	}
	secret, err := k.kr.Open(sealed, sealContext(tenant, keyID))
	return secret, err == nil
}

type approverKeys struct{ f fsm.Reader }

func (k approverKeys) ApproverKey(tenant, keyID string) (protocol.ApproverKey, bool) {
	pub, who, ok := k.f.ApproverKey(tenant, keyID)
	if !ok || len(pub) != ed25519.PublicKeySize {
		return protocol.ApproverKey{}, false
	}
	return protocol.ApproverKey{Public: pub, Approver: who}, true
}

type nonces struct{ f fsm.Reader }

func (n nonces) Consumed(nonce string) bool { return n.f.NonceConsumed(nonce) }
