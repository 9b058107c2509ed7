package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/writhq/writ/client"
)

// overloadFactor is how many times the load's submitters flood the cluster
// in the overload scenario.
const overloadFactor = 10

// overload floods the cluster for hold with ten times the load's
// submitters, each sending a new key's intent to one server without
// waiting for its outcome and, refused, the next one 20–80 ms later rather
// than after the Retry-After it is sent. Every submission is recorded in
// the history like the load's. The agents' slots are held meanwhile by
// runs that wait for a release file (holdSlots), so that the queue only
// grows and reaches its bound however slowly the submitters go: with the
// slots free, clients slower than the agents (a loaded machine) would see
// the queue drain as fast as they fill it, and nothing refused. The leader
// must keep its place: every server names it whenever asked (every
// 200 ms), no submission is answered no_leader, and the excess is refused
// 429 overloaded.
func overload(hold time.Duration) func(context.Context, *Suite, *Load, *Report) error {
	return func(ctx context.Context, s *Suite, l *Load, r *Report) error {
		leader, err := s.C.WaitLeader(ctx, 60*time.Second)
		if err != nil {
			return err
		}
		s.waitAcked(l, 15)
		release, err := s.holdSlots(ctx, l)
		if err != nil {
			return err
		}
		// Whatever happens, the held runs end (the witness gives up waiting
		// after 20 s anyway).
		defer os.WriteFile(release, nil, 0o644)
		n := overloadFactor * s.Load.Workers
		s.Logf("nemesis: %d submitters flood the cluster for %s (the leader is %s)", n, hold, ServerNames[leader])
		r.Faults++
		fctx, cancel := context.WithTimeout(ctx, hold)
		defer cancel()
		var (
			admitted, refused, noLeader, other atomic.Int64
			mu                                 sync.Mutex
			refusedIn                          []time.Duration
			seen                               = map[string]int{} // leaders other than the first named, by server
		)
		var wg sync.WaitGroup
		wg.Go(func() {
			for fctx.Err() == nil {
				for i := range s.C.Servers {
					h, err := s.C.Health(fctx, i)
					if got, _ := h["leader"].(string); err == nil && got != ServerNames[leader] {
						mu.Lock()
						seen[fmt.Sprintf("%s named %q", ServerNames[i], got)]++
						mu.Unlock()
					}
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
		for w := range n {
			wg.Go(func() {
				cl := s.C.Client(w % len(s.C.Servers))
				cl.Failover = 0
				defer cl.CloseIdleConnections()
				for i := 0; fctx.Err() == nil; i++ {
					key := fmt.Sprintf("%s-flood-%03d-%05d", l.prefix, w, i)
					start := time.Now()
					_, err := l.onceErr(fctx, cl, key, key+"-a", "", "", 10*time.Second, 0)
					var ae *client.Error
					switch {
					case err == nil:
						admitted.Add(1)
					case errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests:
						refused.Add(1)
						mu.Lock()
						refusedIn = append(refusedIn, time.Since(start))
						mu.Unlock()
						time.Sleep(time.Duration(20+rand.IntN(60)) * time.Millisecond)
					case errors.As(err, &ae) && ae.Code == "no_leader":
						noLeader.Add(1)
					case fctx.Err() == nil:
						other.Add(1)
						time.Sleep(50 * time.Millisecond)
					}
				}
			})
		}
		wg.Wait()
		if err := os.WriteFile(release, nil, 0o644); err != nil {
			return err
		}
		slices.Sort(refusedIn)
		pct := func(p int) time.Duration {
			if len(refusedIn) == 0 {
				return 0
			}
			return refusedIn[min(len(refusedIn)-1, len(refusedIn)*p/100)].Round(100 * time.Microsecond)
		}
		s.Logf("nemesis: flood over: %d admitted, %d refused 429 (answered in p50 %s, p99 %s), %d no_leader, %d other errors",
			admitted.Load(), refused.Load(), pct(50), pct(99), noLeader.Load(), other.Load())
		for what, times := range seen {
			r.problem("the leader changed under overload: %s (%d times), the leader was %s", what, times, ServerNames[leader])
		}
		if noLeader.Load() > 0 {
			r.problem("%d submissions were answered no_leader under overload", noLeader.Load())
		}
		if refused.Load() == 0 {
			r.problem("no submission was refused 429 under a flood of %d submitters", n)
		}
		return nil
	}
}

// holdSlots submits one intent of the witness tool per agent slot, each
// lasting until the file it returns exists (at most 20 s), and returns
// once all of them run: every slot is then taken, and what is admitted
// next queues. The intents are recorded in the history like the load's.
func (s *Suite) holdSlots(ctx context.Context, l *Load) (string, error) {
	n := s.C.cfg.AgentConcurrency * len(s.C.Agents)
	release := filepath.Join(s.C.WitnessDir, l.prefix+"-release")
	cl := s.C.Client(-1)
	defer cl.CloseIdleConnections()
	var held []string
	for i := range n {
		key := fmt.Sprintf("%s-slot-%02d", l.prefix, i)
		if l.onceFor(ctx, cl, key, key+"-a", "", release, 30*time.Second) == "" {
			return "", fmt.Errorf("faults: the intent %s to hold an agent's slot was not admitted", key)
		}
		held = append(held, key)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		running := 0
		for _, k := range held {
			running += min(s.C.Runs(k), 1)
		}
		if running == n {
			s.Logf("nemesis: %d runs hold the agents' %d slots", running, n)
			return release, nil
		}
		if time.Now().After(deadline) {
			os.WriteFile(release, nil, 0o644)
			return "", fmt.Errorf("faults: %d of the %d runs to hold the agents' slots started within 60 s", running, n)
		}
	}
}
