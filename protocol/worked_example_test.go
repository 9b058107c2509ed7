package protocol_test

import (
	"encoding/base64"
	"os"
	"strings"
	"testing"

	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/protocol/protocoltest"
)

// TestWorkedExample: the intent and the signed read docs/protocol.md works
// by hand are right, and the document shows each value it claims.
func TestWorkedExample(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	var v protocoltest.IntentVectors
	protocoltest.Load(t, "intent.json", &v)
	c := v.Cases[0]
	if c.Name != "valid" {
		t.Fatalf("the first intent vector is %q, the document works %q", c.Name, "valid")
	}
	key, err := base64.StdEncoding.DecodeString(v.Keys["orch-1"])
	if err != nil {
		t.Fatal(err)
	}
	in, err := protocol.DecodeIntent([]byte(c.IntentJSON), 0)
	if err != nil {
		t.Fatal(err)
	}
	ph, err := protocol.PayloadHash(in.Tool, in.Params)
	if err != nil {
		t.Fatal(err)
	}
	signing, err := protocol.SigningInput(protocol.KindIntent, []byte(c.IntentJSON))
	if err != nil {
		t.Fatal(err)
	}
	const target, at = "/v1/intents/int-0001?wait=30s", "2026-11-22T10:01:00Z"
	read := protocol.ReadSigningInput("GET", target, "acme", "orch-1", at)
	for what, want := range map[string]string{
		"key":                  v.Keys["orch-1"],
		"payload hash":         ph,
		"intent signing input": "```\n" + string(signing) + "\n```",
		"intent signature":     protocol.HMACSign(key, signing),
		"the vector's sig":     in.Sig,
		"read signing input":   "```\n" + string(read) + "\n```",
		"read signature":       protocol.SignRead(key, "GET", target, "acme", "orch-1", at),
		"payload hash input":   `{"params":{"msg":"hello world"},"tool":"echo"}`,
	} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("docs/protocol.md does not show the %s:\n%s", what, want)
		}
	}
	if protocol.HMACSign(key, signing) != in.Sig {
		t.Errorf("the vector's sig is not the HMAC of its signing input")
	}
}
