package cli

import (
	"encoding/json"
	"fmt"

	"github.com/writhq/writ/protocol"
)

// intentExplanation is what `writ intent verify --explain` shows a client
// implementer whose signature does not verify: the exact bytes a server
// hashes and MACs, and the values it expects.
type intentExplanation struct {
	// PayloadHashInput is JCS({"params": params, "tool": tool}).
	PayloadHashInput string `json:"payload_hash_input,omitempty"`
	PayloadHash      string `json:"payload_hash,omitempty"`
	// SigningInput is "writ/v1/intent\n" + JCS(intent without "sig").
	SigningInput string `json:"signing_input"`
	// ExpectedSig is the HMAC-SHA256 of SigningInput with the key named by
	// the intent's key_id, when that key was given.
	ExpectedSig string `json:"expected_sig,omitempty"`
	Sig         string `json:"sig"`
}

// explainIntent computes the explanation of raw; it needs only a JSON
// object, so that a malformed intent is explained as far as it can be.
func explainIntent(raw []byte, keys fileKeys) (*intentExplanation, error) {
	in, err := protocol.SigningInput(protocol.KindIntent, raw)
	if err != nil {
		return nil, err
	}
	var head struct {
		Tool   string          `json:"tool"`
		Params json.RawMessage `json:"params"`
		KeyID  string          `json:"key_id"`
		Sig    string          `json:"sig"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	x := &intentExplanation{SigningInput: string(in), Sig: head.Sig}
	if len(head.Params) > 0 {
		if cp, err := protocol.Canonicalize(head.Params); err == nil {
			tool, _ := json.Marshal(head.Tool)
			x.PayloadHashInput = `{"params":` + string(cp) + `,"tool":` + string(tool) + `}`
		}
		x.PayloadHash, _ = protocol.PayloadHash(head.Tool, head.Params)
	}
	if secret, ok := keys[head.KeyID]; ok {
		x.ExpectedSig = protocol.HMACSign(secret, in)
	}
	return x, nil
}

// printExplanation writes the explanation before the verdict: one JSON
// line, or labelled blocks for -o text.
func (e *env) printExplanation(x *intentExplanation) error {
	if e.output != "text" {
		return e.printJSON(x)
	}
	fmt.Fprintf(e.out, "payload hash input (JCS of {params, tool}):\n%s\npayload_hash: %s\n", x.PayloadHashInput, x.PayloadHash)
	fmt.Fprintf(e.out, "signing input (%d bytes, between the lines):\n---\n%s\n---\n", len(x.SigningInput), x.SigningInput)
	if x.ExpectedSig != "" {
		fmt.Fprintf(e.out, "expected sig: %s\n", x.ExpectedSig)
	}
	_, err := fmt.Fprintf(e.out, "sig:          %s\n", x.Sig)
	return err
}
