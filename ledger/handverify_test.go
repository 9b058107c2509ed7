package ledger_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gowebpki/jcs"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/writhq/writ/internal/jsonx"
)

// verifyByHand is the check that docs/ledger.md shows, written with nothing
// from Writ: x/mod's note and tlog, and an independent JCS library.
func verifyByHand(vkey string, body []byte) (string, error) {
	var r struct {
		Receipt    jsontext.Value `json:"receipt"`
		Index      int64          `json:"index"`
		Proof      []string       `json:"proof"`
		Checkpoint string         `json:"checkpoint"`
	}
	if err := jsonx.UnmarshalLenient(body, &r); err != nil {
		return "", err
	}
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		return "", err
	}
	n, err := note.Open([]byte(r.Checkpoint), note.VerifierList(verifier))
	if err != nil {
		return "", err // bad signature, or not signed by this key
	}
	lines := strings.Split(n.Text, "\n") // origin, size, root, ...
	if lines[0] != verifier.Name() {
		return "", fmt.Errorf("checkpoint is for %q", lines[0])
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return "", err
	}
	root, err := tlog.ParseHash(lines[2])
	if err != nil {
		return "", err
	}
	var proof tlog.RecordProof
	for _, s := range r.Proof {
		h, err := tlog.ParseHash(s)
		if err != nil {
			return "", err
		}
		proof = append(proof, h)
	}
	leaf, err := jcs.Transform(r.Receipt)
	if err != nil {
		return "", err
	}
	if err := tlog.CheckRecord(proof, size, root, r.Index, tlog.RecordHash(leaf)); err != nil {
		return "", err
	}
	return fmt.Sprintf("receipt %d is in %s at size %d, root %s", r.Index, lines[0], size, base64.StdEncoding.EncodeToString(root[:])), nil
}

func TestVerifyByHand(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "bundle.json"))
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		VerifierKey string           `json:"verifier_key"`
		Receipts    []jsontext.Value `json:"receipts"`
	}
	if err := jsonx.UnmarshalLenient(data, &b); err != nil {
		t.Fatal(err)
	}
	for i, body := range b.Receipts {
		if _, err := verifyByHand(b.VerifierKey, body); err != nil {
			t.Errorf("receipt %d of the golden bundle: %v", i, err)
		}
	}
	changed := strings.Replace(string(b.Receipts[0]), "completed", "failed", 1)
	if _, err := verifyByHand(b.VerifierKey, []byte(changed)); err == nil {
		t.Errorf("a changed receipt verified by hand")
	}
}
