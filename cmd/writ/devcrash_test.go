package main_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/client"
	"github.com/writhq/writ/protocol"
)

// TestDevKilledUnderLoad: a real `writ dev` (one server with its agent) is
// killed with SIGKILL while 16 clients submit intents, and restarted, five
// times; after every restart each intent the server had answered for, in
// this round or any before, is still there: its Raft log store came up
// after every kill with every entry it had acknowledged.
func TestDevKilledUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short: writ dev killed and restarted under load, five times")
	}
	dir := t.TempDir()
	addr, raftAddr := freePort(t), freePort(t)
	server := "http://" + addr
	dev := startWritDev(t, dir, addr, raftAddr)
	defer func() {
		if dev != nil {
			dev.Process.Kill()
			dev.Wait()
		}
	}()
	var creds struct {
		Tenant       string `json:"tenant"`
		AdminToken   string `json:"admin_token"`
		Orchestrator struct {
			KeyID  string `json:"key_id"`
			Secret string `json:"secret"`
		} `json:"orchestrator"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "dev.json"))
	if err != nil || json.Unmarshal(b, &creds) != nil {
		t.Fatalf("dev.json: %v", err)
	}
	secret, err := base64.StdEncoding.DecodeString(creds.Orchestrator.Secret)
	if err != nil || len(secret) == 0 {
		t.Fatalf("orchestrator secret: %v", err)
	}
	sign := func(id string) []byte {
		now := time.Now().UTC()
		in := &protocol.Intent{
			Type: "writ.intent/v1", ID: id, Tenant: creds.Tenant, Principal: "crash", RunID: "crash",
			Tool: "echo", Params: jsontext.Value(`{"msg":"hi"}`), IdempotencyKey: id,
			IssuedAt: protocol.FormatTime(now), ExpiresAt: protocol.FormatTime(now.Add(10 * time.Minute)), KeyID: creds.Orchestrator.KeyID,
		}
		in.SetPayloadHash()
		in.Sign(secret)
		raw, _ := json.Marshal(in)
		c, err := protocol.Canonicalize(raw)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var acked []string // intents the server answered 200 for, before some kill
	var next atomic.Int64
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for round := 0; round < 5; round++ {
		c := client.New(server, "")
		stop := make(chan struct{})
		var mu sync.Mutex
		var wg sync.WaitGroup
		var answered atomic.Int64
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					id := fmt.Sprintf("crash-%d", next.Add(1))
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					r, err := c.Submit(ctx, sign(id), nil, 0)
					cancel()
					if err != nil {
						time.Sleep(10 * time.Millisecond) // the server is dead or not yet up
						continue
					}
					if r.IntentID != id {
						t.Errorf("submitted %s, answered for %s", id, r.IntentID)
					}
					answered.Add(1)
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
				}
			}()
		}
		// Load for a while, then kill at a random moment: about every
		// 10 ms a batch of admissions is being written.
		deadline := time.Now().Add(time.Minute)
		for answered.Load() < 50 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(time.Duration(200+rng.IntN(800)) * time.Millisecond)
		dev.Process.Kill()
		dev.Wait()
		close(stop)
		wg.Wait()
		if answered.Load() < 50 {
			t.Fatalf("round %d: only %d intents answered in a minute", round, answered.Load())
		}
		dev = startWritDev(t, dir, addr, raftAddr)
		admin := client.New(server, creds.AdminToken)
		missing := 0
		for _, id := range acked {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := admin.Intent(ctx, id, 0)
			cancel()
			var ae *client.Error
			switch {
			case errors.As(err, &ae) && ae.Code == "not_found":
				missing++
			case err != nil:
				t.Fatalf("round %d: reading %s: %v", round, id, err)
			}
		}
		if missing > 0 {
			t.Fatalf("round %d: %d of %d intents answered before the kills are gone after the restart", round, missing, len(acked))
		}
		t.Logf("round %d: killed with %d intents answered in the round; after the restart all %d answered so far are there",
			round, answered.Load(), len(acked))
	}
	stopWritDev(t, dev)
	dev = nil
}
