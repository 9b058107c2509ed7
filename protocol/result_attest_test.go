package protocol_test

import (
	"crypto/ed25519"
	"reflect"
	"strings"
	"testing"

	"github.com/writhq/writ/protocol"
)

func attested(r *protocol.Result) {
	r.Attest = &protocol.ResultAttest{ExecDigest: protocol.HashBytes([]byte("tool")), WallMS: 12, CPUMS: 3, MaxRSSBytes: 4 << 20}
	r.Egress = &protocol.ResultEgress{Allowed: 1, Refused: 2, BytesUp: 517, BytesDown: 4096, Entries: []protocol.EgressEntry{
		{Host: "api.example", Port: 443, Via: "connect", Allowed: true, BytesUp: 517, BytesDown: 4096},
		{Host: "api.example", Port: 443, Via: "connect", Reason: "sni_mismatch"},
	}}
}

// TestResultAttest: a result with the optional egress and attest members
// verifies and decodes to what was signed; every malformed member is
// refused as malformed; a result without them encodes neither.
func TestResultAttest(t *testing.T) {
	t.Parallel()
	nodes := signerKeys{"node-1": nodePriv.Public().(ed25519.PublicKey)}
	v := verifierAt(t, t0)
	for _, c := range []struct {
		name string
		mod  func(*protocol.Result)
		want protocol.Code
	}{
		{"valid", func(*protocol.Result) {}, ""},
		{"refused attempt without host", func(r *protocol.Result) {
			r.Egress.Entries[1].Host = ""
			r.Egress.Entries[1].Reason = "bad_request"
		}, ""},
		{"bad digest", func(r *protocol.Result) { r.Attest.ExecDigest = "md5:00" }, protocol.CodeMalformed},
		{"no digest", func(r *protocol.Result) { r.Attest.ExecDigest = "" }, protocol.CodeMalformed},
		{"negative cpu", func(r *protocol.Result) { r.Attest.CPUMS = -1 }, protocol.CodeMalformed},
		{"negative bytes", func(r *protocol.Result) { r.Egress.BytesUp = -1 }, protocol.CodeMalformed},
		{"counts below entries", func(r *protocol.Result) { r.Egress.Refused = 0 }, protocol.CodeMalformed},
		{"allowed with reason", func(r *protocol.Result) { r.Egress.Entries[0].Reason = "not_allowed" }, protocol.CodeMalformed},
		{"refused without reason", func(r *protocol.Result) { r.Egress.Entries[1].Reason = "" }, protocol.CodeMalformed},
		{"reason not a code", func(r *protocol.Result) { r.Egress.Entries[1].Reason = "Not Allowed!" }, protocol.CodeMalformed},
		{"unknown via", func(r *protocol.Result) { r.Egress.Entries[0].Via = "udp" }, protocol.CodeMalformed},
		{"port out of range", func(r *protocol.Result) { r.Egress.Entries[0].Port = 70000 }, protocol.CodeMalformed},
		{"control character in host", func(r *protocol.Result) { r.Egress.Entries[1].Host = "a\x01b" }, protocol.CodeMalformed},
		{"host too long", func(r *protocol.Result) { r.Egress.Entries[1].Host = strings.Repeat("a", 254) }, protocol.CodeMalformed},
		{"allowed without host", func(r *protocol.Result) { r.Egress.Entries[0].Host = "" }, protocol.CodeMalformed},
		{"too many entries", func(r *protocol.Result) {
			for range protocol.MaxEgressEntries {
				r.Egress.Entries = append(r.Egress.Entries, r.Egress.Entries[1])
			}
			r.Egress.Refused = protocol.MaxEgressEntries + 1
		}, protocol.CodeMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newResult(attested, c.mod)
			// Signed by hand: Sign refuses a malformed result.
			input, err := protocol.SigningInput(protocol.KindResult, encode(t, r))
			if err != nil {
				t.Fatal(err)
			}
			r.Sig = protocol.Ed25519Sign(nodePriv, input)
			got, err := v.VerifyResult(encode(t, r), nodes)
			wantCode(t, err, c.want)
			if err == nil && (!reflect.DeepEqual(got.Attest, r.Attest) || !reflect.DeepEqual(got.Egress, r.Egress)) {
				t.Errorf("decoded %+v %+v, signed %+v %+v", got.Attest, got.Egress, r.Attest, r.Egress)
			}
		})
	}
	plain := string(encode(t, newResult()))
	if strings.Contains(plain, `"egress"`) || strings.Contains(plain, `"attest"`) {
		t.Errorf("a result without them encodes egress or attest: %s", plain)
	}
}
