package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"time"
)

// Signed reads. An orchestrator reads its intents by signing the request with
// one of its tenant's HMAC keys, in four headers: Writ-Tenant, Writ-Key-Id,
// Writ-Time (RFC 3339, within the clock skew of the server's clock) and
// Writ-Signature, the base64 HMAC-SHA256 of ReadSigningInput. A read shows
// only intents of the signing key's tenant.
const (
	HeaderTenant    = "Writ-Tenant"
	HeaderKeyID     = "Writ-Key-Id"
	HeaderTime      = "Writ-Time"
	HeaderSignature = "Writ-Signature"
)

// ReadSigningInput is "writ/v1/read\n" followed by the method, the request
// target (path and query as sent), the tenant, the key id and the time, each
// on its own line.
func ReadSigningInput(method, target, tenant, keyID, at string) []byte {
	return []byte(strings.Join([]string{"writ/v1/read", method, target, tenant, keyID, at}, "\n"))
}

// SignRead returns the Writ-Signature of a read.
func SignRead(secret []byte, method, target, tenant, keyID, at string) string {
	return HMACSign(secret, ReadSigningInput(method, target, tenant, keyID, at))
}

// VerifyRead checks a signed read: unknown_key, bad_signature (compared in
// constant time), or expired / not_yet_valid when Writ-Time is further than
// the skew from now. It returns the tenant the reader may see.
func (v *Verifier) VerifyRead(method, target, tenant, keyID, at, sig string, keys IntentKeys) (string, error) {
	if !validID(tenant) || !validID(keyID) {
		return "", malformed("%s and %s must be ids", HeaderTenant, HeaderKeyID)
	}
	when, err := ParseTime(at)
	if err != nil {
		return "", err
	}
	var secret []byte
	ok := false
	if keys != nil {
		secret, ok = keys.IntentKey(tenant, keyID)
	}
	if !ok {
		return "", fail(CodeUnknownKey, "no key %q for tenant %q", keyID, tenant)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(ReadSigningInput(method, target, tenant, keyID, at))
	want := mac.Sum(nil)
	got, err := strictBase64.DecodeString(sig)
	if err != nil || !hmac.Equal(got, want) {
		return "", fail(CodeBadSignature, "read signature does not verify")
	}
	now := v.cfg.Now()
	switch {
	case when.After(now.Add(v.cfg.Skew)):
		return "", fail(CodeNotYetValid, "%s is in the future", HeaderTime)
	case when.Before(now.Add(-v.cfg.Skew)):
		return "", fail(CodeExpired, "%s is older than the allowed skew of %s", HeaderTime, v.cfg.Skew)
	}
	return tenant, nil
}

// ReadTime formats the time a client puts in Writ-Time.
func ReadTime(t time.Time) string { return FormatTime(t.Truncate(time.Millisecond)) }
