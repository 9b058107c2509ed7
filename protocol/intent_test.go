package protocol_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/protocol"
)

func TestIntentRoundTrip(t *testing.T) {
	t.Parallel()
	raw := signedIntent(t, newIntent(func(in *protocol.Intent) {
		in.Target = &protocol.Target{Labels: map[string]string{"region": "eu"}}
		in.Context = jsontext.Value(`{"channel":"slack"}`)
	}))
	in, err := verifierAt(t, t0.Add(time.Minute)).VerifyIntent(raw, testKeys)
	if err != nil {
		t.Fatalf("VerifyIntent: %v", err)
	}
	if in.Target.Labels["region"] != "eu" || string(in.Context) != `{"channel":"slack"}` {
		t.Errorf("decoded intent lost fields: %+v", in)
	}
}

// TestIntentErrorOrder breaks several things at once and checks that the first
// failing check in the protocol's order is the one reported.
func TestIntentErrorOrder(t *testing.T) {
	t.Parallel()
	v := verifierAt(t, t0.Add(time.Minute))
	expired := func(in *protocol.Intent) { in.ExpiresAt = protocol.FormatTime(t0.Add(30 * time.Second)) }
	longTTL := func(in *protocol.Intent) { in.ExpiresAt = protocol.FormatTime(t0.Add(20 * time.Minute)) }
	future := func(in *protocol.Intent) {
		in.IssuedAt = protocol.FormatTime(t0.Add(5 * time.Minute))
		in.ExpiresAt = protocol.FormatTime(t0.Add(25 * time.Minute))
	}
	wrongHash := func(raw []byte, in *protocol.Intent) []byte {
		in.PayloadHash = protocol.HashBytes([]byte("other"))
		if err := in.Sign(testSecret); err != nil {
			t.Fatal(err)
		}
		return encode(t, in)
	}
	for _, c := range []struct {
		name string
		raw  func() []byte
		want protocol.Code
	}{
		{"expired", func() []byte { return signedIntent(t, newIntent(expired)) }, protocol.CodeExpired},
		{"not yet valid beats expired", func() []byte {
			return signedIntent(t, newIntent(func(in *protocol.Intent) {
				in.IssuedAt = protocol.FormatTime(t0.Add(5 * time.Minute))
				in.ExpiresAt = protocol.FormatTime(t0.Add(6 * time.Minute))
			}))
		}, protocol.CodeNotYetValid},
		{"ttl beats not yet valid", func() []byte { return signedIntent(t, newIntent(future)) }, protocol.CodeTTLTooLong},
		{"hash mismatch beats ttl", func() []byte {
			in := newIntent(longTTL)
			return wrongHash(signedIntent(t, in), in)
		}, protocol.CodePayloadHashMismatch},
		{"bad signature beats hash mismatch", func() []byte {
			in := newIntent(longTTL)
			raw := wrongHash(signedIntent(t, in), in)
			return bytes.Replace(raw, []byte(`"run-1"`), []byte(`"run-2"`), 1)
		}, protocol.CodeBadSignature},
		{"unknown key beats bad signature", func() []byte {
			raw := signedIntent(t, newIntent(expired))
			raw = bytes.Replace(raw, []byte(`"orch-1"`), []byte(`"orch-9"`), 1)
			return bytes.Replace(raw, []byte(`"run-1"`), []byte(`"run-2"`), 1)
		}, protocol.CodeUnknownKey},
		{"key of another tenant is unknown", func() []byte {
			return signedIntent(t, newIntent(func(in *protocol.Intent) { in.Tenant = "globex" }))
		}, protocol.CodeUnknownKey},
		{"malformed beats everything", func() []byte {
			raw := signedIntent(t, newIntent(expired))
			raw = bytes.Replace(raw, []byte(`"orch-1"`), []byte(`"orch-9"`), 1)
			return bytes.Replace(raw, []byte(`"int-1"`), []byte(`"int 1"`), 1)
		}, protocol.CodeMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.VerifyIntent(c.raw(), testKeys)
			wantCode(t, err, c.want)
		})
	}
}

func TestIntentMalformed(t *testing.T) {
	t.Parallel()
	v := verifierAt(t, t0.Add(time.Minute))
	good := string(signedIntent(t, newIntent()))
	replace := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("%q not in %s", old, good)
		}
		return strings.Replace(good, old, new, 1)
	}
	for name, raw := range map[string]string{
		"unknown member":        replace(`"type"`, `"extra":1,"type"`),
		"member in other case":  replace(`"id"`, `"ID"`),
		"duplicate in params":   replace(`{"msg":"hi"}`, `{"msg":"hi","msg":"ho"}`),
		"params is null":        replace(`{"msg":"hi"}`, `null`),
		"params is a string":    replace(`{"msg":"hi"}`, `"{}"`),
		"time with offset":      replace(`"2026-11-22T10:00:00Z"`, `"2026-11-22T12:00:00+02:00"`),
		"time without zone":     replace(`"2026-11-22T10:00:00Z"`, `"2026-11-22T10:00:00"`),
		"comma before fraction": replace(`"2026-11-22T10:00:00Z"`, `"2026-11-22T10:00:00,5Z"`),
		"expiry before issue":   replace(`"2026-11-22T10:10:00Z"`, `"2026-11-22T09:00:00Z"`),
		"hash in upper case":    strings.ToUpper(good[:0]) + replace(`"sha256:`, `"SHA256:`),
		"hash too short":        replace(`"sha256:`, `"sha256:ab`),
		"empty idempotency key": replace(`"idem-1"`, `""`),
		"control char in run":   replace(`"run-1"`, `"run\u0007"`),
		"tenant charset":        replace(`"acme"`, `"acme corp"`),
		"target empty":          replace(`"type"`, `"target":{},"type"`),
		"target both":           replace(`"type"`, `"target":{"node":"n1","labels":{"a":"b"}},"type"`),
		"target empty labels":   replace(`"type"`, `"target":{"labels":{}},"type"`),
		"context not object":    replace(`"type"`, `"context":[1],"type"`),
		"huge integer":          replace(`{"msg":"hi"}`, `{"n":9007199254740993}`),
		"number overflow":       replace(`{"msg":"hi"}`, `{"n":1e999}`),
		"not an object":         `[` + good + `]`,
		"truncated":             good[:len(good)-1],
		"trailing garbage":      good + `x`,
		"invalid UTF-8":         replace(`"support-bot"`, "\"support\xff\""),
		"id too long":           replace(`"int-1"`, `"`+strings.Repeat("i", 129)+`"`),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := v.VerifyIntent([]byte(raw), testKeys)
			wantCode(t, err, protocol.CodeMalformed)
		})
	}
}

func TestIntentSizeLimit(t *testing.T) {
	t.Parallel()
	big := `{"pad":"` + strings.Repeat("x", 2048) + `"}`
	raw := signedIntent(t, newIntent(func(in *protocol.Intent) { in.Params = jsontext.Value(big) }))
	cfg := protocol.DefaultConfig()
	cfg.Now = func() time.Time { return t0.Add(time.Minute) }
	cfg.MaxBytes = len(raw) - 1
	v, err := protocol.NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.VerifyIntent(raw, testKeys)
	wantCode(t, err, protocol.CodeMalformed)
	cfg.MaxBytes = len(raw)
	v, _ = protocol.NewVerifier(cfg)
	if _, err := v.VerifyIntent(raw, testKeys); err != nil {
		t.Fatalf("at exactly the limit: %v", err)
	}
	if _, err := protocol.DecodeIntent(bytes.Repeat([]byte(" "), protocol.DefaultMaxBytes+1), 0); protocol.CodeOf(err) != protocol.CodeMalformed {
		t.Fatalf("default limit: got %v, want malformed", err)
	}
}

// TestIntentWireForms: the same intent verifies however it is laid out on the
// wire, because only its canonical form is signed.
func TestIntentWireForms(t *testing.T) {
	t.Parallel()
	raw := signedIntent(t, newIntent(func(in *protocol.Intent) {
		in.Params = jsontext.Value(`{"b":[1.0,2e0],"a":"\u00e9"}`)
	}))
	v := verifierAt(t, t0.Add(time.Minute))
	canon, err := protocol.Canonicalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	indented := jsontext.Value(bytes.Clone(raw))
	if err := indented.Indent(); err != nil {
		t.Fatal(err)
	}
	for name, form := range map[string][]byte{"marshaled": raw, "canonical": canon, "indented": indented} {
		in, err := v.VerifyIntent(form, testKeys)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := string(in.Params); got != `{"a":"é","b":[1,2]}` {
			t.Errorf("%s: params: got %s, want the canonical params", name, got)
		}
	}
}

func TestHMACSignatureForms(t *testing.T) {
	t.Parallel()
	v := verifierAt(t, t0.Add(time.Minute))
	good := string(signedIntent(t, newIntent()))
	in, _ := protocol.DecodeIntent([]byte(good), 0)
	for name, sig := range map[string]string{
		"empty":        "",
		"not base64":   "!!!!",
		"short":        in.Sig[:20],
		"unpadded":     strings.TrimRight(in.Sig, "="),
		"url alphabet": strings.NewReplacer("+", "-", "/", "_").Replace(in.Sig) + "x",
		"extra bytes":  in.Sig[:len(in.Sig)-1] + "AAAA",
	} {
		raw := strings.Replace(good, in.Sig, sig, 1)
		_, err := v.VerifyIntent([]byte(raw), testKeys)
		if protocol.CodeOf(err) != protocol.CodeBadSignature {
			t.Errorf("%s signature: got %v, want bad_signature", name, err)
		}
	}
}

// TestIntentNamesOutsideASCII: member names the fast canonical scanner leaves
// to the library — non-ASCII, escaped — verify like any others.
func TestIntentNamesOutsideASCII(t *testing.T) {
	t.Parallel()
	v := verifierAt(t, t0.Add(time.Minute))
	for _, params := range []string{`{"naïve":1}`, `{"a\nb":1}`, `{"q\"":1}`, `{"msg":{"ключ":"v"}}`, `{"\u20ac":[1,{"é":2}]}`} {
		raw := signedIntent(t, newIntent(func(in *protocol.Intent) { in.Params = jsontext.Value(params) }))
		canon, err := protocol.Canonicalize(raw)
		if err != nil {
			t.Fatal(err)
		}
		for name, form := range map[string][]byte{"as marshaled": raw, "canonical": canon} {
			in, c, err := v.VerifyIntentCanonical(form, testKeys)
			if err != nil {
				t.Fatalf("params %s, %s: %v", params, name, err)
			}
			if in.Sig == "" || !bytes.Contains(c, []byte(`"sig":"`+in.Sig+`"`)) {
				t.Fatalf("params %s, %s: the canonical form lost the signature: %s", params, name, c)
			}
		}
	}
}
