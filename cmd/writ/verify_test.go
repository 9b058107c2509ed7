package main_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestVerifyOffline checks `writ verify bundle` and `writ verify receipt`
// against the ledger's golden bundle, and against tampered copies of it.
func TestVerifyOffline(t *testing.T) {
	raw, err := os.ReadFile("../../ledger/testdata/bundle.json")
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		VerifierKey string            `json:"verifier_key"`
		Receipts    []json.RawMessage `json:"receipts"`
	}
	if err := json.Unmarshal(raw, &b); err != nil || len(b.Receipts) == 0 {
		t.Fatalf("golden bundle: %v", err)
	}
	dir := t.TempDir()
	bundle := writeFile(t, dir, "bundle.json", string(raw))
	receipt := writeFile(t, dir, "receipt.json", string(b.Receipts[0]))
	tampered := writeFile(t, dir, "tampered.json", strings.Replace(string(b.Receipts[0]), `"completed"`, `"failed"`, 1))
	if !strings.Contains(string(b.Receipts[0]), `"completed"`) {
		t.Fatal("the golden receipt changed; pick another field to tamper with")
	}
	otherKey := strings.Replace(b.VerifierKey, "writ.test/a+", "writ.test/b+", 1)
	for _, c := range []struct {
		args     []string
		wantCode int
		wantErr  string
	}{
		{[]string{"verify", "bundle", bundle, "--key", b.VerifierKey}, 0, ""},
		{[]string{"verify", "receipt", receipt, "--key", b.VerifierKey}, 0, ""},
		{[]string{"verify", "receipt", tampered, "--key", b.VerifierKey}, 1, "proof_mismatch"},
		{[]string{"verify", "bundle", bundle, "--key", otherKey}, 1, ""},
	} {
		out, code := run(t, "", c.args...)
		if code != c.wantCode || (c.wantErr != "" && !strings.Contains(out, `"error":"`+c.wantErr+`"`)) {
			t.Errorf("writ %s: %q exit %d, want exit %d %s", strings.Join(c.args, " "), out, code, c.wantCode, c.wantErr)
		}
		if code == 0 && !strings.HasPrefix(out, `{"valid":true`) {
			t.Errorf("writ %s: %q", strings.Join(c.args, " "), out)
		}
	}
}
