package controlplane_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/protocol"
)

// TestFailuresNeverBlockValid is the NAT test: one address (loopback) sends
// a flood of requests that fail authentication — forged submissions and
// forged reads — and, at the same time, correctly signed submissions and
// reads. Every signed request is served; the flood is counted, answered 429
// past its budget, and held, so that its answers are limited to about one
// per connection per FailureDelay.
func TestFailuresNeverBlockValid(t *testing.T) {
	testtier.Slow(t, "a timed flood of forged requests beside the valid ones, with the package's other tests held back")
	const delay = 200 * time.Millisecond
	// The budget is not refilled while the test looks (one failure per
	// 1,000 s): at one a second, a pause of a second anywhere (a loaded
	// machine, the race detector) gave the source a failure to spend, and
	// the wrong admin token below its own error instead of 429.
	d := startDevWith(t, func(c *controlplane.Config) {
		c.FailureBurst, c.FailuresPerSecond, c.FailureDelay = 3, 0.001, delay
	})
	base := "http://" + d.s.Addr().String()
	forgedIntent := d.intent(t, "echo", `{}`, func(in *protocol.Intent) { in.KeyID = "no-such-key" })
	forgedBody := `{"intent":` + string(forgedIntent) + `}`

	// Spend the budget first, so that every valid request below meets a
	// source that is already past it.
	for range 4 {
		http.Post(base+"/v1/intents", "application/json", strings.NewReader(forgedBody))
	}

	const flooders = 8
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The flood ends with stop: each flooder sends nothing more and waits
	// for the answer to the request it has in flight, so that every
	// failure the flood sent is counted before the counts are read.
	var stop atomic.Bool
	var floodAnswers, flood429 atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := range flooders {
		wg.Go(func() {
			hc := &http.Client{}
			for ctx.Err() == nil && !stop.Load() {
				var req *http.Request
				if i%2 == 0 {
					req, _ = http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/intents", strings.NewReader(forgedBody))
				} else {
					req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/intents/x", nil)
					req.Header.Set(protocol.HeaderSignature, "forged")
				}
				resp, err := hc.Do(req)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				floodAnswers.Add(1)
				if resp.StatusCode == http.StatusTooManyRequests {
					flood429.Add(1)
				}
			}
		})
	}

	// Valid submissions and signed reads from the same address, during the
	// flood: none refused.
	var valid sync.WaitGroup
	var validErrs atomic.Int64
	for w := range 3 {
		valid.Go(func() {
			for k := range 8 {
				raw := d.intent(t, "echo", `{}`, func(in *protocol.Intent) {
					in.ID = fmt.Sprintf("nat-%d-%d", w, k)
					in.IdempotencyKey = in.ID
				})
				resp, err := d.c.Submit(context.Background(), raw, nil, 0)
				if err != nil || resp.IntentID != fmt.Sprintf("nat-%d-%d", w, k) {
					validErrs.Add(1)
					t.Errorf("a signed submission during the flood: %+v %v", resp, err)
					continue
				}
				if _, err := d.c.Intent(context.Background(), resp.IntentID, 0); err != nil {
					validErrs.Add(1)
					t.Errorf("a signed read during the flood: %v", err)
				}
			}
		})
	}
	valid.Wait()
	// Let the flood run long enough for its rate to show.
	if rest := 2*time.Second - time.Since(start); rest > 0 {
		time.Sleep(rest)
	}
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	if validErrs.Load() > 0 {
		t.Fatalf("%d signed requests were refused during the flood", validErrs.Load())
	}

	// Each flooding connection gets at most one answer per delay once past
	// the budget (plus the one in flight when the flood stopped).
	t.Logf("flood: %d answers (%d of them 429) to %d connections in %s; 24 signed submissions and 24 signed reads served", floodAnswers.Load(), flood429.Load(), flooders, elapsed.Round(time.Millisecond))
	limit := int64(flooders * (int(elapsed/delay) + 2))
	if n := floodAnswers.Load(); n > limit {
		t.Errorf("the flood got %d answers in %s; at most %d with %d connections held %s each", n, elapsed, limit, flooders, delay)
	}
	if flood429.Load() == 0 {
		t.Errorf("the flood got no 429 (answers: %d)", floodAnswers.Load())
	}
	m := metricsText(t, base)
	failed, limited := metricValue(m, "writ_auth_failures_total"), metricValue(m, "writ_auth_failures_limited_total")
	if limited < float64(flood429.Load()) || failed < limited {
		t.Errorf("metrics: %v failures, %v limited; the flood saw %d 429s", failed, limited, flood429.Load())
	}

	// Admin calls: a wrong token is a failure like any other (this source is
	// past its budget: 429), and the right one from the same address is
	// served.
	if err := client.New(base, "wrong").Admin(context.Background(), "PUT", "tenants/nat", []byte(`{}`)); apiCode(err) != "overloaded" {
		t.Errorf("a wrong admin token from a source past its budget: got %v, want overloaded", err)
	}
	if after := metricValue(metricsText(t, base), "writ_auth_failures_total"); after != failed+1 {
		t.Errorf("a wrong admin token: %v failures counted, want %v", after, failed+1)
	}
	if err := d.admin.Admin(context.Background(), "PUT", "tenants/nat", []byte(`{}`)); err != nil {
		t.Errorf("the admin token from the same address: %v", err)
	}
}

func metricsText(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// metricValue reads an unlabelled sample from Prometheus text, -1 when it
// is absent.
func metricValue(text, name string) float64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}
