package protocol

import "github.com/go-json-experiment/json/jsontext"

// VerifyDispatch decodes and checks a dispatch as the node it is addressed to
// must: malformed, unknown_key (not a trusted server key), bad_signature,
// wrong_node, payload_hash_mismatch, ttl_too_long, not_yet_valid, expired.
// Whether the manifest hash matches the node's allowlist and whether the nonce
// is fresh are the node's checks, against its own stores.
func (v *Verifier) VerifyDispatch(data []byte, node string, servers SignerKeys) (*Dispatch, error) {
	d := new(Dispatch)
	so, err := decodeSigned(data, v.cfg.MaxBytes, d)
	if err != nil {
		return nil, err
	}
	if err := verifyEd25519(servers, d.KeyID, KindDispatch, so, d.Sig); err != nil {
		return nil, err
	}
	if d.Node != node {
		return nil, fail(CodeWrongNode, "dispatch is addressed to node %q", d.Node)
	}
	if payloadHash(so.paramsJSON(), so.toolJSON()) != d.PayloadHash {
		return nil, fail(CodePayloadHashMismatch, "payload_hash is not the hash of the tool and params")
	}
	if err := v.window(d.IssuedAt, d.ExpiresAt); err != nil {
		return nil, err
	}
	d.Params = jsontext.Value(so.paramsJSON())
	return d, nil
}

// CheckDispatchWindow checks again, against the clock now, the validity
// window of a dispatch that VerifyDispatch returned (ttl_too_long,
// not_yet_valid, expired): what may change while the same bytes wait, for
// example for a slot on the node. Their signature, addressee and payload
// hash cannot, and are not checked again.
func (v *Verifier) CheckDispatchWindow(d *Dispatch) error {
	return v.window(d.IssuedAt, d.ExpiresAt)
}

// VerifyResult decodes and checks a result's signature by a node key:
// malformed, unknown_key, bad_signature. Whether the key belongs to the node
// the dispatch went to is the control plane's check.
func (v *Verifier) VerifyResult(data []byte, nodes SignerKeys) (*Result, error) {
	r, _, err := v.VerifyResultCanonical(data, nodes)
	return r, err
}

// VerifyResultCanonical is VerifyResult that also returns the result's
// canonical JSON, signature included: the form to record, without
// canonicalizing the result a second time. It never returns data itself.
func (v *Verifier) VerifyResultCanonical(data []byte, nodes SignerKeys) (*Result, []byte, error) {
	r := new(Result)
	c, top, err := decodeStrict(data, v.cfg.MaxBytes, r)
	if err != nil {
		return nil, nil, err
	}
	if err := r.validate(); err != nil {
		return nil, nil, err
	}
	if err := verifyEd25519(nodes, r.KeyID, KindResult, withoutSig(c, top), r.Sig); err != nil {
		return nil, nil, err
	}
	if &c[0] == &data[0] {
		c = append([]byte(nil), c...) // canonical input: do not hand back the caller's buffer
	}
	return r, c, nil
}

func verifyEd25519(keys SignerKeys, keyID string, kind Kind, so signedObject, sig string) error {
	if keys == nil {
		return fail(CodeUnknownKey, "no key %q", keyID)
	}
	pub, ok := keys.SignerKey(keyID)
	if !ok {
		return fail(CodeUnknownKey, "no key %q", keyID)
	}
	if !ed25519Verify(pub, kind.Prefix(), so.body, sig) {
		return fail(CodeBadSignature, "signature does not verify")
	}
	return nil
}
