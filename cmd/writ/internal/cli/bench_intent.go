package cli

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/protocol"
)

// signBenchIntent signs an intent of the echo tool for the benchmarks, its
// id also its idempotency key.
func signBenchIntent(tenant, keyID string, secret []byte, id, params string, target *protocol.Target) []byte {
	now := time.Now().UTC()
	in := &protocol.Intent{
		Type: "writ.intent/v1", ID: id, Tenant: tenant, Principal: "bench", RunID: "bench",
		Tool: "echo", Params: jsontext.Value(params), IdempotencyKey: id, Target: target,
		IssuedAt: protocol.FormatTime(now), ExpiresAt: protocol.FormatTime(now.Add(10 * time.Minute)), KeyID: keyID,
	}
	in.SetPayloadHash()
	in.Sign(secret)
	raw, _ := json.Marshal(in)
	return raw
}

func decodeSecret(b64 string) ([]byte, error) { return base64.StdEncoding.DecodeString(b64) }

func sortDurations(d []time.Duration) { slices.Sort(d) }
