package protocol

import "github.com/go-json-experiment/json/jsontext"

// VerifyIntent decodes and authenticates an intent. The checks, in the order
// their failures are reported: malformed, unknown_key, bad_signature,
// payload_hash_mismatch, ttl_too_long, not_yet_valid, expired. An intent that
// fails authentication is never described beyond the first three codes.
func (v *Verifier) VerifyIntent(data []byte, keys IntentKeys) (*Intent, error) {
	in := new(Intent)
	so, err := decodeSigned(data, v.cfg.MaxBytes, in)
	if err != nil {
		return nil, err
	}
	if err := v.authenticateIntent(in, so, keys); err != nil {
		return nil, err
	}
	// The signed bytes hold the canonical params; keep those, not the wire's.
	in.Params = jsontext.Value(so.paramsJSON())
	return in, nil
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
