package controlplane

import "testing"

// TestReceiptContent: an answer not entitled to output never carries a
// receipt whose result holds it (writ.result/v1); a v2 receipt, which holds
// only hashes, goes to every answer.
func TestReceiptContent(t *testing.T) {
	t.Parallel()
	v1 := []byte(`{"type":"writ.receipt/v1","index":3,"tenant":"acme","result":{"type":"writ.result/v1","output":"SECRET"}}`)
	v2 := []byte(`{"type":"writ.receipt/v1","index":4,"tenant":"acme","result":{"type":"writ.result/v2","captured_hash":"sha256:00"}}`)
	for _, c := range []struct {
		name       string
		leaf       []byte
		withOutput bool
		want       bool
	}{
		{"v1, not entitled", v1, false, false},
		{"v1, entitled", v1, true, true},
		{"v2, not entitled", v2, false, true},
		{"undecodable, not entitled", []byte(`{`), false, false},
	} {
		if got := receiptContent(c.leaf, c.withOutput) != nil; got != c.want {
			t.Errorf("%s: receipt attached %v, want %v", c.name, got, c.want)
		}
	}
}
