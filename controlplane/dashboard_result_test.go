package controlplane

import (
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/web"
)

// TestAddAttest: the intent page gets a result's attest digest and egress
// audit; a result without them shows neither.
func TestAddAttest(t *testing.T) {
	t.Parallel()
	r := protocol.Result{Status: "ok", Sandbox: "gvisor",
		Attest: &protocol.ResultAttest{ExecDigest: protocol.HashBytes([]byte("x")), WallMS: 5},
		Egress: &protocol.ResultEgress{Allowed: 1, Refused: 9, BytesUp: 3, BytesDown: 4, Entries: []protocol.EgressEntry{
			{Host: "a.example", Port: 443, Via: "connect", Allowed: true, BytesUp: 3, BytesDown: 4},
			{Host: "b.example", Port: 443, Via: "sni", Reason: "not_allowed"},
		}}}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	info := &web.ResultInfo{}
	addAttest(info, raw)
	if info.ExecDigest != r.Attest.ExecDigest || info.Egress == nil || info.Egress.Refused != 9 ||
		len(info.Egress.Entries) != 2 || info.Egress.Entries[1].Reason != "not_allowed" || info.Egress.Entries[0].BytesDown != 4 {
		t.Fatalf("got %+v (egress %+v)", info, info.Egress)
	}
	plain := &web.ResultInfo{}
	addAttest(plain, []byte(`{"status":"ok"}`))
	if plain.ExecDigest != "" || plain.Egress != nil {
		t.Fatalf("plain result: %+v", plain)
	}
	addAttest(nil, raw) // no result view: nothing to add to
	addAttest(plain, []byte("{"))
	if plain.Egress != nil {
		t.Fatal("a broken result added an audit")
	}
}
