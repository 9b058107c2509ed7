package controlplane_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/protocol"
)

// TestOutputOnlyToEntitled: a run's output reaches the tenant's signed read
// (beside the result, and on /output) and an admin, checked against the
// node's signed captured_hash; the receipt, the submission's answer, an
// unsigned read and another tenant see none of it.
func TestOutputOnlyToEntitled(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	secretText := "confidential-" + fmt.Sprint(time.Now().UnixNano())
	params := `{"msg":"` + secretText + `"}`
	raw := d.intent(t, "echo", params)
	sub, err := d.c.Submit(ctx, raw, nil, 10*time.Second)
	if err != nil || sub.State != "completed" {
		t.Fatalf("submit: %+v %v", sub, err)
	}
	if sub.Output != nil || bytes.Contains(sub.Result, []byte(secretText)) {
		t.Fatalf("the submission's answer carries the output: %+v", sub)
	}
	res, err := protocol.DecodeResult(sub.Result, 0)
	if err != nil || res.Version() != 2 {
		t.Fatalf("result: %v, version %d; want a %s", err, res.Version(), protocol.ResultTypeV2)
	}

	// The tenant's signed read: the output beside the result.
	r, err := d.c.Intent(ctx, sub.IntentID, 0)
	if err != nil {
		t.Fatal(err)
	}
	data, ok, err := client.ResponseOutput(r)
	if err != nil || !ok || string(data) != params {
		t.Fatalf("signed read: got output %q (%v, %v), want %q", data, ok, err, params)
	}
	if m, err := res.CheckOutput(data); err != nil || m != protocol.MatchCaptured {
		t.Fatalf("the output served does not match the signed result: %v", err)
	}
	// And on its own route, for the tenant and for an admin.
	for name, c := range map[string]*client.Client{"tenant": d.c, "admin": d.admin} {
		o, err := c.Output(ctx, sub.IntentID)
		if err != nil || string(o.Data) != params || o.CapturedHash != res.CapturedHash || o.OutputHash != res.OutputHash ||
			o.CapturedBytes != *res.CapturedBytes || o.Truncated || o.DispatchID != res.DispatchID {
			t.Fatalf("%s: GET output: %+v %v", name, o, err)
		}
	}

	// The receipt, as anyone may fetch it, holds the hashes and not the text.
	if r.ReceiptIndex == nil {
		t.Fatal("no receipt index")
	}
	base := "http://" + d.s.Addr().String()
	for _, path := range []string{fmt.Sprintf("/v1/receipts/%d", *r.ReceiptIndex), "/v1/intents/" + sub.IntentID,
		"/v1/intents/" + sub.IntentID + "/output"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if bytes.Contains(body, []byte(secretText)) {
			t.Errorf("GET %s without credentials: the output is in the answer: %s", path, body)
		}
	}
	receipt, err := d.admin.Receipt(ctx, *r.ReceiptIndex)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(receipt, []byte(secretText)) || !bytes.Contains(receipt, []byte(res.CapturedHash)) {
		t.Fatalf("the receipt carries the output, or not its hash: %s", receipt)
	}

	// The table's size is in the metrics, its content is not.
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(metrics, []byte("writ_outputs_kept 1\n")) ||
		!bytes.Contains(metrics, []byte(fmt.Sprintf("writ_outputs_kept_bytes %d\n", len(params)))) || bytes.Contains(metrics, []byte(secretText)) {
		t.Errorf("metrics do not count the one output of %d bytes:\n%s", len(params), metrics)
	}

	anon := client.New(base, "")
	if _, err := anon.Output(ctx, sub.IntentID); apiCode(err) != "unauthorized" {
		t.Fatalf("unsigned output read: got %v, want unauthorized", err)
	}
	secret, _ := base64.StdEncoding.DecodeString(d.creds.Orchestrator.Secret)
	if err := d.admin.Admin(ctx, "PUT", "tenants/globex/keys/g1", []byte(fmt.Sprintf(`{"secret":%q}`, base64.StdEncoding.EncodeToString(secret)))); err != nil {
		t.Fatal(err)
	}
	other := client.New(base, "")
	other.SignReads("globex", "g1", secret)
	if _, err := other.Output(ctx, sub.IntentID); apiCode(err) != "not_found" {
		t.Fatalf("another tenant's output read: got %v, want not_found", err)
	}
	if _, err := d.c.Output(ctx, "int-none"); apiCode(err) != "not_found" || !strings.Contains(err.Error(), "no intent") {
		t.Fatalf("output of no intent: got %v, want not_found", err)
	}
}

// TestNodeOutputChecked: a result whose output does not match its signed
// captured_hash, and a writ.result/v1 (which would put the output in the
// receipt), are refused with an error ack, and the intent gets no result.
func TestNodeOutputChecked(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	forged := []byte(`{"msg":"forged"}`)
	for _, c := range []struct {
		name   string
		output *[]byte
		v1     bool
		code   protocol.Code
	}{
		{"output not the one signed", &forged, false, protocol.CodeOutputMismatch},
		{"result v1", nil, true, protocol.CodeMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			d.node.BadOutput.Store(c.output)
			d.node.V1.Store(c.v1)
			sub, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"x"}`), nil, 0)
			if err != nil || sub.Dispatch == nil {
				t.Fatalf("submit: %+v %v", sub, err)
			}
			select {
			case a := <-d.node.errAcks:
				if a.DispatchID != sub.Dispatch.ID || a.Error.Code != c.code {
					t.Fatalf("got ack %+v, want %s for %s", a, c.code, sub.Dispatch.ID)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no error ack")
			}
			r, err := d.c.Intent(ctx, sub.IntentID, 0)
			if err != nil || r.State != "dispatched" || r.Result != nil || r.Output != nil {
				t.Fatalf("after a refused result: %+v %v, want still dispatched with none", r, err)
			}
			if _, err := d.c.Output(ctx, sub.IntentID); apiCode(err) != "not_found" {
				t.Fatalf("output: got %v, want not_found", err)
			}
		})
	}
}
