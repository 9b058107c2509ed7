package faults

import (
	"context"
	"fmt"
	"time"
)

// Suite runs scenarios one after another against one cluster, each under
// its own load, and checks each.
type Suite struct {
	C       *Cluster
	Checker *Checker
	Load    LoadConfig
	Logf    func(format string, args ...any)

	current  Scenario
	minority []string // submissions sent to an isolated server
}

// waitAcked waits until n more submissions are acknowledged, at most 30 s.
func (s *Suite) waitAcked(l *Load, n int64) {
	want := l.Acked.Load() + n
	for deadline := time.Now().Add(30 * time.Second); l.Acked.Load() < want && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
}

// Run runs one scenario: the load starts, the nemesis injects and heals,
// the load goes on a little and stops, every process is running again, and
// the checker checks. An error means the suite could not do its work (the
// cluster never recovered); violated guarantees are in the report.
func (s *Suite) Run(ctx context.Context, sc Scenario) (*Report, error) {
	r := &Report{Scenario: sc.Name}
	if err := s.Load.Validate(); err != nil {
		return r, err
	}
	s.current, s.minority = sc, nil
	l := NewLoad(s.C, s.Load, sc.Name)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { l.Run(stop); close(done) }()
	began := time.Now()
	err := sc.Inject(ctx, s, l, r)
	if err == nil {
		s.waitAcked(l, 20) // the healed cluster takes submissions again
	}
	close(stop)
	<-done
	if err != nil {
		return r, fmt.Errorf("faults: %s: %w", sc.Name, err)
	}
	for _, p := range append(append([]*Proc{}, s.C.Servers...), s.C.Agents...) {
		if !p.Running() {
			return r, fmt.Errorf("faults: %s: %s is not running after the scenario healed:\n%s", sc.Name, p.Name, Excerpt(p))
		}
	}
	if err := s.C.WaitAgents(ctx, 90*time.Second); err != nil {
		return r, err
	}
	if err := s.C.WaitGossip(ctx, 30*time.Second); err != nil {
		r.problem("%v", err)
	}
	if err := s.Checker.Check(ctx, l, r); err != nil {
		return r, fmt.Errorf("faults: checking %s: %w", sc.Name, err)
	}
	if len(s.minority) > 0 {
		cl := s.C.Client(-1)
		defer cl.CloseIdleConnections()
		for _, id := range s.minority {
			rec, _, err := attempt(ctx, cl, id)
			if err != nil {
				return r, err
			}
			if rec {
				r.problem("%s, sent only to the isolated server, was recorded", id)
			}
		}
	}
	s.Logf("%s (%s)", r, time.Since(began).Round(time.Second))
	return r, nil
}

// Sum adds the figures of reports into one, named name.
func Sum(name string, reports []*Report) *Report {
	t := &Report{Scenario: name, States: map[string]int{}}
	for _, r := range reports {
		t.Faults += r.Faults
		t.Keys += r.Keys
		t.Acked += r.Acked
		t.Unanswered += r.Unanswered
		t.Resubmitted += r.Resubmitted
		t.Admitted += r.Admitted
		t.Completed += r.Completed
		t.Executions += r.Executions
		t.RanNotCompleted += r.RanNotCompleted
		t.RanStuck += r.RanStuck
		t.Duplicates += r.Duplicates
		t.Lost += r.Lost
		t.Extra += r.Extra
		t.Stuck += r.Stuck
		t.Receipts += r.Receipts
		t.LedgerSize = max(t.LedgerSize, r.LedgerSize)
		t.Problems = append(t.Problems, r.Problems...)
		for k, v := range r.States {
			t.States[k] += v
		}
	}
	return t
}
