package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/client"
	"github.com/writhq/writ/protocol"
)

// LoadConfig bounds the client load of one scenario.
type LoadConfig struct {
	// Workers submit concurrently, each one key at a time.
	Workers int
	// Pause between one worker's keys: a steady stream, not a flood.
	Pause time.Duration
	// Expiry of each intent; a key's submission is retried (the same signed
	// intent) until it is answered or this long has passed.
	Expiry time.Duration
	// Wait is how long a submission waits for its intent's final state
	// (?wait=): each worker has at most one intent in flight, so the load
	// follows what the agents can run instead of queueing without bound.
	Wait time.Duration
	// SecondEvery: every SecondEvery-th key is submitted again under another
	// intent id with the same payload (a second orchestrator replica), whose
	// answer must name the first intent.
	SecondEvery int
	// Refused is the pause after a submission refused before any decision
	// (not_yet_valid while the leader's clock is behind, say): such an
	// answer comes at once, and without it the load would spin through
	// thousands of keys a second.
	Refused time.Duration
}

// DefaultLoadConfig is the short run's load.
func DefaultLoadConfig() LoadConfig {
	return LoadConfig{Workers: 4, Pause: 50 * time.Millisecond, Expiry: 2 * time.Minute, Wait: 10 * time.Second, SecondEvery: 4, Refused: time.Second}
}

// Validate reports a load that is not bounded.
func (l LoadConfig) Validate() error {
	if l.Workers < 1 || l.Workers > 512 || l.Expiry < 10*time.Second || l.Wait < 0 || l.Wait > 60*time.Second || l.SecondEvery < 1 {
		return fmt.Errorf("faults: load needs 1-512 workers, an expiry of at least 10 s, a wait of at most 60 s and SecondEvery ≥ 1: %+v", l)
	}
	return nil
}

// Op is one submission of the idempotency history: the key, the intent id
// sent, and the intent id answered (Unknown when no answer came). A read
// (after the scenario) answers the ids the cluster holds for the key.
type Op struct {
	Read     bool
	Key, ID  string
	Answered string
	Unknown  bool
	// Unbound: the answer is an attempt rejected before any decision, which
	// binds nothing.
	Unbound bool
}

// Load is the client side of one scenario: workers that sign and submit
// witness intents, and the history of what they were answered.
type Load struct {
	cfg     LoadConfig
	c       *Cluster
	prefix  string
	clock   time.Time
	next    atomic.Int64
	Acked   atomic.Int64 // submissions answered with an intent
	Errors  atomic.Int64 // submissions without an answer (each retried)
	Retried atomic.Int64 // resubmissions of the same signed intent

	mu      sync.Mutex
	history []porcupine.Operation
	keys    []string            // in order
	ids     map[string][]string // key → the intent ids submitted for it
	bodies  map[string][]byte   // intent id → its signed body
	expires map[string]time.Time
}

// NewLoad prepares the load of a scenario; its keys start with prefix.
func NewLoad(c *Cluster, cfg LoadConfig, prefix string) *Load {
	return &Load{cfg: cfg, c: c, prefix: prefix, clock: time.Now(), ids: map[string][]string{}, bodies: map[string][]byte{}, expires: map[string]time.Time{}}
}

func (l *Load) ts() int64 { return int64(time.Since(l.clock)) }

// Run submits until stop is closed, then returns once every worker has
// finished its key.
func (l *Load) Run(stop <-chan struct{}) {
	var wg sync.WaitGroup
	for w := range l.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := l.c.Client(-1)
			cl.NoProofWait = true // the checker reads the receipts and proves the ledger
			defer cl.CloseIdleConnections()
			for {
				select {
				case <-stop:
					return
				default:
				}
				k := l.next.Add(1) - 1
				key := fmt.Sprintf("%s-%05d", l.prefix, k)
				first, refused := l.submit(cl, w, key, key+"-a")
				if first != "" && k%int64(l.cfg.SecondEvery) == 0 {
					l.submit(cl, w, key, key+"-b")
				}
				pause := l.cfg.Pause
				if refused {
					pause = max(pause, l.cfg.Refused)
				}
				select {
				case <-stop:
					return
				case <-time.After(pause):
				}
			}
		}()
	}
	wg.Wait()
}

// submit signs an intent and submits it until it is answered or its expiry
// passes, resending the same bytes each time; it returns the id answered,
// and whether the answer was a refusal before any decision.
func (l *Load) submit(cl *client.Client, worker int, key, id string) (string, bool) {
	body, expires := l.sign(key, id)
	l.mu.Lock()
	if len(l.ids[key]) == 0 {
		l.keys = append(l.keys, key)
	}
	l.ids[key] = append(l.ids[key], id)
	l.bodies[id], l.expires[id] = body, expires
	l.mu.Unlock()
	for try := 0; time.Now().Before(expires.Add(-5 * time.Second)); try++ {
		if try > 0 {
			l.Retried.Add(1)
			time.Sleep(200 * time.Millisecond)
		}
		call := l.ts()
		// The server waits up to Wait for the final state; 5 s more for
		// the rest. A server that hangs (its disk full) is left for the
		// next one after that, as an orchestrator's deadline would.
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Wait+5*time.Second)
		r, err := cl.Submit(ctx, body, nil, l.cfg.Wait)
		cancel()
		ret := l.ts()
		out := Op{Key: key, ID: id}
		if err != nil {
			out.Unknown, ret = true, math.MaxInt64
			l.Errors.Add(1)
		} else {
			out.Answered, out.Unbound = r.IntentID, r.State == "rejected"
			l.Acked.Add(1)
		}
		l.mu.Lock()
		l.history = append(l.history, porcupine.Operation{ClientId: worker, Input: Op{Key: key, ID: id}, Call: call, Output: out, Return: ret})
		l.mu.Unlock()
		if err == nil {
			return r.IntentID, out.Unbound
		}
	}
	return "", false
}

// sign signs an intent of the witness tool for key: the tool appends a line
// to the witness file named after the key each time it runs.
func (l *Load) sign(key, id string) ([]byte, time.Time) {
	return l.signFor(key, id, "", "")
}

// signFor signs an intent of the witness tool for key that runs on node
// (any node for ""), and, with waitFor, lasts until that file exists (at
// most 20 s).
func (l *Load) signFor(key, id, node, waitFor string) ([]byte, time.Time) {
	p := map[string]string{"file": filepath.Join(l.c.WitnessDir, key)}
	if waitFor != "" {
		p["wait_for"] = waitFor
	}
	params, _ := json.Marshal(p)
	now := time.Now().UTC()
	expires := now.Add(l.cfg.Expiry)
	in := &protocol.Intent{
		Type: "writ.intent/v1", ID: id, Tenant: Tenant, Principal: "bot", RunID: l.prefix, Tool: "witness",
		Params: jsontext.Value(params), IdempotencyKey: key, IssuedAt: protocol.FormatTime(now),
		ExpiresAt: protocol.FormatTime(expires), KeyID: "orch",
	}
	if node != "" {
		in.Target = &protocol.Target{Node: node}
	}
	in.SetPayloadHash()
	in.Sign(l.c.secret)
	b, _ := json.Marshal(in) // an Intent always encodes
	return b, expires
}

// Keys returns the keys submitted, in order.
func (l *Load) Keys() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.keys...)
}
