package controlplane

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/policy"
	"github.com/writhq/writ/protocol"
)

// BenchmarkAdmit measures admissions per second through the HTTP API of a
// single dev server at concurrency 64, intents with 512 bytes of params,
// beside a baseline of raw Raft applies of entries of the same size on the
// same server in the same run. The ratio is the cost of verification, policy,
// schema and the FSM over Raft itself. (The figure is for a 3-server
// cluster; that benchmark comes with writ server.)
func BenchmarkAdmit(b *testing.B) {
	base := DefaultConfig()
	base.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	base.MaxInFlight = 4096
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	s, creds, err := StartDev(ctx, DevConfig{DataDir: b.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", Base: base})
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	for s.Addr() == nil {
		time.Sleep(time.Millisecond)
	}
	benchNode(b, s)
	url := "http://" + s.Addr().String() + "/v1/intents"
	secret, _ := base64.StdEncoding.DecodeString(creds.Orchestrator.Secret)
	params := `{"msg":"` + strings.Repeat("x", 500) + `"}`
	const conc = 64

	var rawPerSec float64
	b.Run("baseline=raft-apply", func(b *testing.B) {
		entry := &fsm.PutPolicy{Text: strings.Repeat("x", 700), Hash: "sha256:x"}
		rawPerSec = parallel(b, conc, func(int) error {
			_, _, err := s.node.Apply(context.Background(), fsm.MsgPutPolicy, entry)
			return err
		})
	})
	// Put the dev policy back after the baseline overwrote it.
	if aerr := (adminAPI{s}).PutPolicy(context.Background(), []byte(policy.DevPolicy)); aerr != nil {
		b.Fatal(aerr)
	}
	b.Run("admit", func(b *testing.B) {
		bodies := make([][]byte, b.N)
		now := time.Now().UTC()
		for i := range bodies {
			in := &protocol.Intent{
				Type: "writ.intent/v1", ID: "int-" + randHex(), Tenant: "dev", Principal: "bench",
				RunID: "run", Tool: "echo", Params: jsontext.Value(params), IdempotencyKey: randHex(),
				IssuedAt: protocol.FormatTime(now), ExpiresAt: protocol.FormatTime(now.Add(10 * time.Minute)),
				KeyID: creds.Orchestrator.KeyID,
			}
			in.SetPayloadHash()
			in.Sign(secret)
			raw, _ := json.Marshal(in)
			c, _ := protocol.Canonicalize(raw)
			bodies[i] = []byte(`{"intent":` + string(c) + `}`)
		}
		tr := &http.Transport{MaxIdleConnsPerHost: conc}
		hc := &http.Client{Transport: tr}
		perSec := parallel(b, conc, func(i int) error {
			resp, err := hc.Post(url, "application/json", strings.NewReader(string(bodies[i])))
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return fmt.Errorf("status %d", resp.StatusCode)
			}
			return nil
		})
		b.ReportMetric(perSec, "admissions/s")
		if rawPerSec > 0 {
			b.ReportMetric(perSec/rawPerSec, "x-raft")
		}
	})
}

// parallel runs b.N calls of f over conc goroutines and returns calls/s.
func parallel(b *testing.B, conc int, f func(i int) error) float64 {
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N {
					return
				}
				if err := f(i); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(b.N) / time.Since(start).Seconds()
}

func randHex() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// benchNode records, through Raft, a ready node that may run every registered
// tool with room for every dispatch, so that admissions are dispatched (the
// node never answers: this measures admission, not execution).
func benchNode(b *testing.B, s *Server) {
	b.Helper()
	ctx := context.Background()
	tools := map[string]string{}
	for _, t := range s.reads.Tools() {
		tools[t.Name] = t.Hash
	}
	at := time.Now()
	for _, step := range []struct {
		t   fsm.MsgType
		cmd any
	}{
		{fsm.MsgPutJoinToken, fsm.PutJoinToken{ID: "bench", Hash: "sha256:b", ExpiresAt: at.Add(time.Hour)}},
		{fsm.MsgEnroll, fsm.Enroll{At: at, TokenID: "bench", TokenHash: "sha256:b", Node: "bench-node", Name: "bench", Public: make([]byte, 32)}},
		{fsm.MsgNodeSession, fsm.NodeSession{At: at, Node: "bench-node", Server: "elsewhere", Connected: true,
			Tiers: []string{"wasm"}, Tools: tools, Concurrency: 1 << 30}},
	} {
		if res, _, err := s.node.Apply(ctx, step.t, step.cmd); err != nil || res.Err != nil {
			b.Fatalf("bench node: %v %v", err, res.Err)
		}
	}
}
