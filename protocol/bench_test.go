package protocol_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/protocol"
)

// benchIntent returns a signed intent whose params are about size bytes of JSON,
// with nested objects, arrays, numbers and escapes, in non-canonical member order.
func benchIntent(tb testing.TB, size int) ([]byte, hmacKeys, time.Time) {
	tb.Helper()
	var p strings.Builder
	p.WriteString(`{`)
	for i := 0; p.Len() < size-80; i++ {
		if i > 0 {
			p.WriteString(`,`)
		}
		switch i % 4 {
		case 0:
			fmt.Fprintf(&p, `"z_field_%03d":"value %d with some text \u00e9\n"`, i, i)
		case 1:
			fmt.Fprintf(&p, `"m_num_%03d":%d.50`, i, i*1000)
		case 2:
			fmt.Fprintf(&p, `"a_list_%03d":[1,2,3,"x"]`, i)
		default:
			fmt.Fprintf(&p, `"q_obj_%03d":{"k":true,"j":null}`, i)
		}
	}
	p.WriteString(`}`)
	secret := []byte("0123456789abcdef0123456789abcdef")
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	in := &protocol.Intent{
		Type: protocol.KindIntent.Type(), ID: "int-bench", Tenant: "acme", Principal: "support-bot",
		RunID: "run-1", Tool: "echo", Params: jsontext.Value(p.String()), IdempotencyKey: "idem-1",
		IssuedAt: protocol.FormatTime(now), ExpiresAt: protocol.FormatTime(now.Add(10 * time.Minute)),
		Context: jsontext.Value(`{"channel":"slack"}`), KeyID: "orch-1",
	}
	if err := in.SetPayloadHash(); err != nil {
		tb.Fatal(err)
	}
	if err := in.Sign(secret); err != nil {
		tb.Fatal(err)
	}
	b, err := json.Marshal(in)
	if err != nil {
		tb.Fatal(err)
	}
	return b, hmacKeys{"orch-1": secret}, now.Add(time.Minute)
}

// BenchmarkVerifyIntent measures full verification of an intent with 1 KiB of
// params, beside a raw HMAC-SHA256 of the same bytes: the ratio is the cost of
// strict decoding and canonicalization over the cryptography alone.
func BenchmarkVerifyIntent(b *testing.B) {
	raw, keys, now := benchIntent(b, 1024)
	cfg := protocol.DefaultConfig()
	cfg.Now = func() time.Time { return now }
	v, err := protocol.NewVerifier(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := v.VerifyIntent(raw, keys); err != nil {
		b.Fatal(err)
	}
	var rawNS float64
	b.Run("baseline=hmac", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		secret := keys["orch-1"]
		for b.Loop() {
			m := hmac.New(sha256.New, secret)
			m.Write(raw)
			m.Sum(nil)
		}
		rawNS = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	canonical, err := protocol.Canonicalize(raw)
	if err != nil {
		b.Fatal(err)
	}
	// Writ's client and CLI send canonical JSON; other clients may not.
	for _, wire := range []struct {
		name string
		raw  []byte
	}{{"canonical", canonical}, {"noncanonical", raw}} {
		b.Run("verify="+wire.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire.raw)))
			for b.Loop() {
				if _, err := v.VerifyIntent(wire.raw, keys); err != nil {
					b.Fatal(err)
				}
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if rawNS > 0 {
				b.ReportMetric(ns/rawNS, "x-hmac")
			}
		})
	}
}
