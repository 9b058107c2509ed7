package protocol_test

import (
	"testing"
	"time"

	"github.com/writhq/writ/protocol"
)

func TestSignedReads(t *testing.T) {
	t.Parallel()
	v := verifierAt(t, t0)
	at := protocol.ReadTime(t0)
	sig := protocol.SignRead(testSecret, "GET", "/v1/intents/int-1?wait=1s", "acme", "orch-1", at)
	check := func(method, target, tenant, keyID, at, sig string) protocol.Code {
		_, err := v.VerifyRead(method, target, tenant, keyID, at, sig, testKeys)
		return protocol.CodeOf(err)
	}
	if c := check("GET", "/v1/intents/int-1?wait=1s", "acme", "orch-1", at, sig); c != "" {
		t.Fatalf("a valid read: %s", c)
	}
	for name, c := range map[string]struct {
		got, want protocol.Code
	}{
		"other target":      {check("GET", "/v1/intents/int-2?wait=1s", "acme", "orch-1", at, sig), protocol.CodeBadSignature},
		"other method":      {check("POST", "/v1/intents/int-1?wait=1s", "acme", "orch-1", at, sig), protocol.CodeBadSignature},
		"other tenant":      {check("GET", "/v1/intents/int-1?wait=1s", "globex", "orch-1", at, sig), protocol.CodeUnknownKey},
		"unknown key":       {check("GET", "/v1/intents/int-1?wait=1s", "acme", "orch-9", at, sig), protocol.CodeUnknownKey},
		"garbage signature": {check("GET", "/v1/intents/int-1?wait=1s", "acme", "orch-1", at, "!!"), protocol.CodeBadSignature},
		"old":               {check("GET", "/v1/intents/int-1", "acme", "orch-1", protocol.ReadTime(t0.Add(-time.Minute)), protocol.SignRead(testSecret, "GET", "/v1/intents/int-1", "acme", "orch-1", protocol.ReadTime(t0.Add(-time.Minute)))), protocol.CodeExpired},
		"future":            {check("GET", "/v1/intents/int-1", "acme", "orch-1", protocol.ReadTime(t0.Add(time.Minute)), protocol.SignRead(testSecret, "GET", "/v1/intents/int-1", "acme", "orch-1", protocol.ReadTime(t0.Add(time.Minute)))), protocol.CodeNotYetValid},
		"bad time":          {check("GET", "/v1/intents/int-1", "acme", "orch-1", "yesterday", sig), protocol.CodeMalformed},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", name, c.got, c.want)
		}
	}
}
