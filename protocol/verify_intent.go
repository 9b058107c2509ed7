package protocol

import "github.com/go-json-experiment/json/jsontext"

// VerifyIntent decodes and authenticates an intent. The checks, in the order
// their failures are reported: malformed, unknown_key, bad_signature,
// payload_hash_mismatch, ttl_too_long, not_yet_valid, expired. An intent that
// fails authentication is never described beyond the first three codes.
func (v *Verifier) VerifyIntent(data []byte, keys IntentKeys) (*Intent, error) {
	in, _, err := v.verifyIntent(data, keys, false)
	return in, err
}

// VerifyIntentCanonical is VerifyIntent that also returns the intent's
// canonical JSON, signature included: the form to store and to hash, without
// encoding the intent again.
func (v *Verifier) VerifyIntentCanonical(data []byte, keys IntentKeys) (*Intent, []byte, error) {
	return v.verifyIntent(data, keys, true)
}

func (v *Verifier) verifyIntent(data []byte, keys IntentKeys, canonical bool) (*Intent, []byte, error) {
	in := new(Intent)
	c, top, err := decodeStrict(data, v.cfg.MaxBytes, in)
	if err != nil {
		return nil, nil, err
	}
	if err := in.validate(); err != nil {
		return nil, nil, err
	}
	so := withoutSig(c, top)
	if err := v.authenticateIntent(in, so, keys); err != nil {
		return nil, nil, err
	}
	// The signed bytes hold the canonical params; keep those, not the wire's.
	in.Params = jsontext.Value(so.paramsJSON())
	if !canonical {
		return in, nil, nil
	}
	if &c[0] == &data[0] {
		c = append([]byte(nil), c...) // canonical input: do not hand back the caller's buffer
	}
	return in, c, nil
}

func (v *Verifier) authenticateIntent(in *Intent, so signedObject, keys IntentKeys) error {
	var secret []byte
	ok := false
	if keys != nil {
		secret, ok = keys.IntentKey(in.Tenant, in.KeyID)
	}
	if !ok {
		return fail(CodeUnknownKey, "no key %q for tenant %q", in.KeyID, in.Tenant)
	}
	if !hmacVerify(secret, KindIntent.Prefix(), so.body, in.Sig) {
		return fail(CodeBadSignature, "signature does not verify")
	}
	if payloadHash(so.paramsJSON(), so.toolJSON()) != in.PayloadHash {
		return fail(CodePayloadHashMismatch, "payload_hash is not the hash of the tool and params")
	}
	return v.window(in.IssuedAt, in.ExpiresAt)
}
