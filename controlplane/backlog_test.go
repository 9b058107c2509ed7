package controlplane_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/protocol"
)

// TestBacklogBound: with MaxQueued intents queued for a node (one enrolled
// but not connected, so they wait for it), the next submission is refused
// 429 overloaded with Retry-After and recorded nowhere; once the node
// connects and the queue drains, submissions are admitted again.
// writ_intents_queued follows the queue.
func TestBacklogBound(t *testing.T) {
	t.Parallel()
	d := startDevWith(t, func(c *controlplane.Config) { c.MaxQueued = 2; c.FSM.NodeWait = time.Minute })
	base := "http://" + d.s.Addr().String()
	ctx := context.Background()
	late := enrollSim(t, d.s, base)
	target := func(in *protocol.Intent) { in.Target = &protocol.Target{Node: late.ID} }
	for i := range 2 {
		r, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"queued"}`, target), nil, 0)
		if err != nil || r.State != "queued" {
			t.Fatalf("intent %d for a node not yet connected: %+v %v, want queued", i, r, err)
		}
	}
	if q := queuedMetric(t, base); q != "2" {
		t.Fatalf("writ_intents_queued %q, want 2", q)
	}
	raw := d.intent(t, "echo", `{"msg":"third"}`, target)
	resp, err := http.Post(base+"/v1/intents", "application/json", strings.NewReader(`{"intent":`+string(raw)+`}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"overloaded"`) {
		t.Fatalf("a submission past the queue's bound: %d %q %s, want 429 overloaded with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	in, _ := protocol.DecodeIntent(raw, 0)
	var ae *client.Error
	if _, err := d.admin.Intent(ctx, in.ID, 0); !errors.As(err, &ae) || ae.Code != "not_found" {
		t.Fatalf("the refused intent was recorded: %v", err)
	}
	if err := late.connect(t, d.s.AgentAddr(), toolHashes(t, base)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(late.close)
	eventually.True(t, "the queue to drain once its node connected", func() bool { return queuedMetric(t, base) == "0" })
	r, err := d.c.Submit(ctx, raw, nil, 10*time.Second)
	if err != nil || r.State != "completed" {
		t.Fatalf("the refused intent sent again once the queue drained: %+v %v, want completed", r, err)
	}
}

func queuedMetric(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "writ_intents_queued "); ok {
			return v
		}
	}
	t.Fatal("/metrics has no writ_intents_queued")
	return ""
}
