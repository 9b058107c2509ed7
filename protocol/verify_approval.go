package protocol

// VerifyApproval decodes and checks an approval of intent, which the caller has
// already verified. The checks, in the order their failures are reported:
// malformed, approval_invalid (unknown key, bad signature, or a key bound to
// another approver), approval_mismatch (intent id, payload hash or tenant),
// approval_expired (expired, issued further in the future than the skew, or
// valid for longer than the maximum TTL),
// approval_replayed (nonce consumed), approval_forbidden (self-approval, or
// refused by policy). nonces and policy may be nil: no nonce is consumed, and
// only self-approval is refused.
func (v *Verifier) VerifyApproval(data []byte, intent *Intent, keys ApproverKeys, nonces NonceSet, policy ApprovalPolicy) (*Approval, error) {
	a, err := v.AuthenticateApproval(data, keys)
	if err != nil {
		return nil, err
	}
	if intent == nil {
		return nil, malformed("no intent to check the approval against")
	}
	switch {
	case a.IntentID != intent.ID:
		return nil, fail(CodeApprovalMismatch, "approval is for intent %q", a.IntentID)
	case a.PayloadHash != intent.PayloadHash:
		return nil, fail(CodeApprovalMismatch, "approval is for other params (payload_hash differs)")
	case a.Tenant != intent.Tenant:
		return nil, fail(CodeApprovalMismatch, "approval is for tenant %q", a.Tenant)
	}
	issued, expires, _ := checkTimes(a.IssuedAt, a.ExpiresAt)
	now := v.cfg.Now()
	if !expires.After(now) {
		return nil, fail(CodeApprovalExpired, "approval expired at %s", a.ExpiresAt)
	}
	if issued.After(now.Add(v.cfg.Skew)) {
		return nil, fail(CodeApprovalExpired, "approval is not valid until %s", a.IssuedAt)
	}
	if expires.Sub(issued) > v.cfg.MaxTTL {
		// An approval outlives nothing it approves (intents live at most
		// MaxTTL), and its nonce must be kept for its whole lifetime.
		return nil, fail(CodeApprovalExpired, "approval is valid for %s, over the maximum of %s", expires.Sub(issued), v.cfg.MaxTTL)
	}
	if nonces != nil && nonces.Consumed(a.Nonce) {
		return nil, fail(CodeApprovalReplayed, "approval nonce was already used")
	}
	if a.Approver == intent.Principal {
		return nil, fail(CodeApprovalForbidden, "an intent's principal cannot approve it")
	}
	if policy != nil && !policy.MayApprove(intent, a) {
		return nil, fail(CodeApprovalForbidden, "policy does not allow %q to approve this intent", a.Approver)
	}
	return a, nil
}

// AuthenticateApproval makes the first checks of VerifyApproval, which need no
// intent: malformed, then approval_invalid (unknown key, bad signature, or a
// key bound to another approver). A server makes them before it looks the
// intent up, so that an unauthenticated approval learns nothing about intents.
func (v *Verifier) AuthenticateApproval(data []byte, keys ApproverKeys) (*Approval, error) {
	a := new(Approval)
	so, err := decodeSigned(data, v.cfg.MaxBytes, a)
	if err != nil {
		return nil, err
	}
	var key ApproverKey
	ok := false
	if keys != nil {
		key, ok = keys.ApproverKey(a.Tenant, a.KeyID)
	}
	if !ok || !ed25519Verify(key.Public, KindApproval.Prefix(), so.body, a.Sig) {
		return nil, fail(CodeApprovalInvalid, "signature does not verify with a registered approver key")
	}
	if key.Approver != "" && key.Approver != a.Approver {
		return nil, fail(CodeApprovalInvalid, "key %q belongs to approver %q, not %q", a.KeyID, key.Approver, a.Approver)
	}
	return a, nil
}
