package faults

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/writhq/writ/client"
)

// Report is what the checker found after one scenario: the figures, and
// every violated guarantee in Problems.
type Report struct {
	Scenario string
	Faults   int // faults the nemesis injected
	Keys     int
	// Submissions answered and not answered (each unanswered one retried),
	// and the resubmissions after the scenario that named the original.
	Acked, Unanswered, Resubmitted int
	Admitted, Completed            int
	States                         map[string]int
	// Executions counts the witness's runs; RanNotCompleted the runs of
	// intents that ended failed or unknown (the node's result was lost).
	Executions, RanNotCompleted int
	RanStuck                    int // runs of intents that were stuck
	Duplicates, Lost, Extra     int // keys run twice; missing intents or receipts; receipts beyond one per intent
	Stuck                       int
	Receipts                    int // receipts read and checked
	LedgerSize                  int64
	Problems                    []string
}

func (r *Report) problem(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// String is the report's line of figures.
func (r *Report) String() string {
	var states []string
	for s, n := range r.States {
		states = append(states, fmt.Sprintf("%s=%d", s, n))
	}
	sort.Strings(states)
	return fmt.Sprintf("%-18s faults=%d keys=%d acked=%d unanswered=%d admitted=%d completed=%d executions=%d ran_not_completed=%d ran_stuck=%d duplicates=%d lost=%d extra=%d stuck=%d receipts=%d resubmitted=%d ledger=%d states=[%s] problems=%d",
		r.Scenario, r.Faults, r.Keys, r.Acked, r.Unanswered, r.Admitted, r.Completed, r.Executions, r.RanNotCompleted, r.RanStuck,
		r.Duplicates, r.Lost, r.Extra, r.Stuck, r.Receipts, r.Resubmitted, r.LedgerSize, strings.Join(states, " "), len(r.Problems))
}

// Checker checks each scenario's outcome; it remembers how far the ledger
// was read.
type Checker struct {
	c    *Cluster
	read int64 // receipts below this index were checked by earlier scenarios
	seen map[string]bool
	// receipted: the intents whose final receipt was read; an earlier
	// scenario's intent that was stuck gets its first one later.
	receipted map[string]bool
	// Slack is how long past an intent's expiry it may stay non-final.
	Slack time.Duration
}

// NewChecker returns the checker of a cluster.
func NewChecker(c *Cluster) *Checker {
	return &Checker{c: c, seen: map[string]bool{}, receipted: map[string]bool{}, Slack: 30 * time.Second}
}

// Check waits for the healed cluster to agree, then checks the scenario's
// history and outcomes, filling in r.
func (k *Checker) Check(ctx context.Context, l *Load, r *Report) error {
	c := k.c
	leader, err := c.WaitLeader(ctx, 90*time.Second)
	if err != nil {
		return err
	}
	if err := c.WaitCaughtUp(ctx, leader, 60*time.Second); err != nil {
		return err
	}
	r.Acked, r.Unanswered = int(l.Acked.Load()), int(l.Errors.Load())
	keys := l.Keys()
	r.Keys, r.States = len(keys), map[string]int{}
	// Which intents the cluster holds for each key, read from the leader: the
	// reads that close the idempotency history.
	admitted := map[string]string{} // intent id → key, of the intents that bind their key
	recorded := map[string]string{} // intent id → key, of every recorded attempt
	bound := map[string]string{}    // key → its intent id
	history := append([]porcupine.Operation(nil), l.history...)
	cl := c.Client(leader)
	defer cl.CloseIdleConnections()
	for _, key := range keys {
		var held []string
		for _, id := range l.ids[key] {
			rec, binds, err := attempt(ctx, cl, id)
			if err != nil {
				return fmt.Errorf("faults: reading intent %s: %w", id, err)
			}
			if rec {
				recorded[id] = key
			}
			if binds {
				held = append(held, id)
				admitted[id], bound[key] = key, id
			}
		}
		at := l.ts()
		history = append(history, porcupine.Operation{ClientId: l.cfg.Workers, Input: Op{Read: true, Key: key},
			Call: at, Output: Op{Read: true, Key: key, Answered: strings.Join(held, ",")}, Return: at + 1})
		if len(held) > 1 {
			r.Duplicates++
			r.problem("key %s: the cluster holds %d intents: %v", key, len(held), held)
		}
	}
	for _, op := range l.history {
		if out := op.Output.(Op); !out.Unknown && (admitted[out.Answered] == "" && !(out.Unbound && recorded[out.Answered] != "")) {
			r.Lost++
			r.problem("key %s: submission %s was answered with intent %s, which the cluster does not hold", out.Key, out.ID, out.Answered)
		}
	}
	if res := porcupine.CheckOperationsTimeout(IdempotencyModel.ToModel(), history, time.Minute); res != porcupine.Ok {
		r.problem("the idempotency history of %d operations is not linearizable (%s)", len(history), res)
	}
	r.Admitted = len(admitted)
	// Every recorded intent ends, by its expiry plus slack at the latest.
	var ids []string
	var latest time.Time
	for id := range recorded {
		ids = append(ids, id)
		if e := l.expires[id]; e.After(latest) {
			latest = e
		}
	}
	sort.Strings(ids)
	answers, stuck := k.waitFinal(ctx, ids, time.Until(latest.Add(k.Slack)))
	for _, id := range stuck {
		r.Stuck++
		r.problem("intent %s is not final %s after its expiry", id, k.Slack)
	}
	for id, a := range answers {
		if admitted[id] == "" && a.Error != nil {
			r.States[a.State+"/"+string(a.Error.Code)]++ // attempts that bound nothing: rejected, with why
		} else if admitted[id] == "" {
			r.States[a.State]++
		}
	}
	// The witness's runs against the intents' outcomes.
	for _, key := range keys {
		runs := c.Runs(key)
		r.Executions += runs
		id, ok := bound[key]
		if runs > 1 {
			r.Duplicates++
			r.problem("key %s: the tool ran %d times", key, runs)
		}
		if !ok {
			if runs > 0 {
				r.problem("key %s: the tool ran, but the cluster holds no intent of the key", key)
			}
			continue
		}
		a := answers[id]
		if a == nil {
			r.RanStuck += runs // stuck, reported above
			continue
		}
		r.States[a.State]++
		switch a.State {
		case "completed":
			r.Completed++
			if runs != 1 {
				r.problem("intent %s completed, and the tool ran %d times", id, runs)
			}
		case "failed", "unknown":
			if runs == 1 {
				r.RanNotCompleted++
			}
		default: // refused before it ran: rejected, denied, expired, canceled
			if runs != 0 {
				r.problem("intent %s ended %s, yet the tool ran %d times", id, a.State, runs)
			}
		}
	}
	if err := k.checkReceipts(ctx, leader, l, recorded, answers, r); err != nil {
		return err
	}
	// Resubmitting a key's first signed intent answers that intent if it
	// binds the key, else the intent the key is bound to; a first intent
	// recorded as refused before any decision (not_yet_valid, say), with
	// nothing bound since, answers itself.
	want := map[string]string{}
	for key, id := range bound {
		want[key] = id
	}
	for id, key := range recorded {
		if id == key+"-a" && (admitted[id] != "" || bound[key] == "") {
			want[key] = id
		}
	}
	k.resubmit(ctx, l, want, r)
	time.Sleep(500 * time.Millisecond) // a checkpoint of the last receipts
	if err := c.WaitCaughtUp(ctx, leader, 60*time.Second); err != nil {
		return err
	}
	return k.checkLedgers(ctx, r)
}

// attempt reads intent id: whether the cluster recorded it at all, and
// whether it binds its key (every recorded attempt does but one rejected
// before any decision: an idempotency conflict, no eligible node, …).
func attempt(ctx context.Context, cl *client.Client, id string) (recorded, binds bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := cl.Intent(ctx, id, 0)
	var ae *client.Error
	switch {
	case err == nil:
		return true, r.State != "rejected", nil
	case errors.As(err, &ae) && ae.Code == "not_found":
		return false, false, nil
	}
	return false, false, err
}

func final(state string) bool {
	return state != "dispatched" && state != "pending_approval" && state != "queued" && state != ""
}

// waitFinal waits, up to d in all, until each intent is final; it returns
// the answers, and the intents still not final at the deadline.
func (k *Checker) waitFinal(ctx context.Context, ids []string, d time.Duration) (map[string]*client.IntentResponse, []string) {
	out := make(map[string]*client.IntentResponse, len(ids))
	var stuck []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(max(d, 10*time.Second))
	work := make(chan string)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := k.c.Client(-1)
			defer cl.CloseIdleConnections()
			for id := range work {
				var r *client.IntentResponse
				var err error
				for ctx.Err() == nil {
					left := time.Until(deadline)
					c, cancel := context.WithTimeout(ctx, left+5*time.Second)
					r, err = cl.Intent(c, id, min(max(left, 0), 10*time.Second).Truncate(time.Second))
					cancel()
					if (err == nil && final(r.State)) || time.Now().After(deadline) {
						break
					}
					if err != nil {
						time.Sleep(100 * time.Millisecond)
					}
				}
				mu.Lock()
				if err == nil && r != nil && final(r.State) {
					out[id] = r
				} else {
					stuck = append(stuck, id)
				}
				mu.Unlock()
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	sort.Strings(stuck)
	return out, stuck
}

// resubmit sends every key's first signed intent again: each answer must
// name the intent want says.
func (k *Checker) resubmit(ctx context.Context, l *Load, want map[string]string, r *Report) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan string)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := k.c.Client(-1)
			defer cl.CloseIdleConnections()
			for key := range work {
				c, cancel := context.WithTimeout(ctx, 20*time.Second)
				a, err := cl.Submit(c, l.bodies[key+"-a"], nil, 0)
				cancel()
				mu.Lock()
				switch {
				case err != nil:
					r.problem("resubmitting key %s: %v", key, err)
				case a.IntentID != want[key]:
					r.problem("resubmitting key %s's first intent answered intent %s, want %s", key, a.IntentID, want[key])
				default:
					r.Resubmitted++
				}
				mu.Unlock()
			}
		}()
	}
	for key := range want {
		work <- key
	}
	close(work)
	wg.Wait()
}
