package faults

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/writhq/writ/client"
)

// Scenario is one kind of fault: Inject runs while the load goes on,
// injects the fault (Times times), heals it, and counts what it injected in
// r.Faults.
type Scenario struct {
	Name   string
	Times  int
	Inject func(ctx context.Context, s *Suite, l *Load, r *Report) error
}

// ClockJump is how far clock-jump moves the leader's clock, each way:
// beyond the protocol's allowed clock skew of 30 s.
const ClockJump = 45 * time.Second

// Scenarios returns the suite's scenarios; hold is how long a pause or a
// partition lasts (well past Raft's election timeout of one second), and
// times how often each kill is repeated.
func Scenarios(hold time.Duration, times int) []Scenario {
	return []Scenario{
		{Name: "leader-kill", Times: times, Inject: killLeader},
		{Name: "agent-kill", Times: times, Inject: killAgent},
		{Name: "leader-pause", Times: 1, Inject: pauseLeader(hold)},
		{Name: "partition-minority", Times: 1, Inject: partitionMinority(hold)},
		{Name: "isolate-minority", Times: 1, Inject: isolateMinority(hold)},
		{Name: "partition-leader", Times: 1, Inject: partitionLeader(hold)},
		{Name: "restart-all", Times: 1, Inject: restartAll},
		{Name: "clock-jump", Times: 1, Inject: clockJump(hold, ClockJump)},
		{Name: "disk-full", Times: 1, Inject: diskFull(hold)},
		{Name: "overload", Times: 1, Inject: overload(hold)},
	}
}

// killLeader kills the leader with SIGKILL under load, and starts it again
// two seconds later, each time.
func killLeader(ctx context.Context, s *Suite, l *Load, r *Report) error {
	for range max(s.current.Times, 1) {
		leader, err := s.C.WaitLeader(ctx, 60*time.Second)
		if err != nil {
			return err
		}
		s.waitAcked(l, 15)
		p := s.C.Servers[leader]
		s.Logf("nemesis: kill -9 the leader %s", p.Name)
		p.Kill()
		r.Faults++
		s.waitAcked(l, 10) // the others elect a leader and go on
		time.Sleep(2 * time.Second)
		if err := p.Start(); err != nil {
			return err
		}
		if _, err := s.C.WaitLeader(ctx, 60*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// killAgent kills an agent with SIGKILL while it runs intents — two of them
// held running until a release file appears, so that the kill surely comes
// mid-run — and starts it again two seconds later, each time.
func killAgent(ctx context.Context, s *Suite, l *Load, r *Report) error {
	for i := range max(s.current.Times, 1) {
		a := s.C.Agents[i%len(s.C.Agents)]
		s.waitAcked(l, 20)
		release := filepath.Join(s.C.WitnessDir, fmt.Sprintf("%s-release-%d", l.prefix, i))
		cl := s.C.Client(-1)
		var held []string
		for h := range 2 {
			key := fmt.Sprintf("%s-held-%d-%d", l.prefix, i, h)
			if l.onceFor(ctx, cl, key, key+"-a", a.Name, release, 30*time.Second) != "" {
				held = append(held, key)
			}
		}
		cl.CloseIdleConnections()
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			n := 0
			for _, k := range held {
				n += s.C.Runs(k)
			}
			if n == len(held) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("faults: the held runs never started on %s (%d of %d)", a.Name, n, len(held))
			}
		}
		s.Logf("nemesis: kill -9 agent %s with %d held runs in flight", a.Name, len(held))
		a.Kill()
		r.Faults++
		os.WriteFile(release, nil, 0o644)
		time.Sleep(2 * time.Second)
		if err := a.Start(); err != nil {
			return err
		}
		if err := s.C.WaitAgents(ctx, 90*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// pauseLeader stops the leader with SIGSTOP for hold, waits for the others
// to elect another, and continues it.
func pauseLeader(hold time.Duration) func(context.Context, *Suite, *Load, *Report) error {
	return func(ctx context.Context, s *Suite, l *Load, r *Report) error {
		leader, err := s.C.WaitLeader(ctx, 60*time.Second)
		if err != nil {
			return err
		}
		s.waitAcked(l, 15)
		p := s.C.Servers[leader]
		s.Logf("nemesis: SIGSTOP the leader %s for %s", p.Name, hold)
		if err := p.Pause(); err != nil {
			return err
		}
		r.Faults++
		began := time.Now()
		other, err := s.newLeader(ctx, leader, hold+20*time.Second)
		if err != nil {
			p.Resume()
			return err
		}
		s.Logf("nemesis: %s leads after %s", ServerNames[other], time.Since(began).Round(time.Millisecond))
		time.Sleep(time.Until(began.Add(hold)))
		return p.Resume()
	}
}

// partitionMinority takes a follower's veth down for hold: the majority
// goes on; the follower catches up once healed.
func partitionMinority(hold time.Duration) func(context.Context, *Suite, *Load, *Report) error {
	return func(ctx context.Context, s *Suite, l *Load, r *Report) error {
		leader, err := s.C.WaitLeader(ctx, 60*time.Second)
		if err != nil {
			return err
		}
		f := ServerNames[(leader+1)%len(ServerNames)]
		s.waitAcked(l, 15)
		s.Logf("nemesis: cut follower %s's link for %s", f, hold)
		if err := s.C.Net.Cut(f); err != nil {
			return err
		}
		r.Faults++
		time.Sleep(hold)
		return s.C.Net.Heal(f)
	}
}

// isolateMinority cuts a follower off the other servers only (blackhole
// routes both ways): clients and agents still reach it. Submissions sent to
// it alone while it is cut off must not be admitted — not then, and not
// once healed.
func isolateMinority(hold time.Duration) func(context.Context, *Suite, *Load, *Report) error {
	return func(ctx context.Context, s *Suite, l *Load, r *Report) error {
		leader, err := s.C.WaitLeader(ctx, 60*time.Second)
		if err != nil {
			return err
		}
		fi := (leader + 1) % len(ServerNames)
		f := ServerNames[fi]
		var peers []string
		for i, n := range ServerNames {
			if i != fi {
				peers = append(peers, n)
			}
		}
		s.waitAcked(l, 15)
		s.Logf("nemesis: cut follower %s off the other servers for %s (clients still reach it)", f, hold)
		if err := s.C.Net.Blackhole(f, peers...); err != nil {
			return err
		}
		r.Faults++
		began := time.Now()
		time.Sleep(3 * time.Second) // past the election timeout: it knows no leader
		cl := s.C.Client(fi)
		cl.Failover = 0
		defer cl.CloseIdleConnections()
		var sent []string
		answers := map[string]int{}
		for i := 0; time.Since(began) < hold; i++ {
			key := fmt.Sprintf("%s-minority-%03d", l.prefix, i)
			id := key + "-a"
			answered, err := l.onceErr(ctx, cl, key, id, "", "", 5*time.Second, 0)
			if answered != "" {
				r.problem("the isolated server %s admitted %s (answered %s)", f, id, answered)
			}
			var ae *client.Error
			switch {
			case errors.As(err, &ae):
				answers[string(ae.Code)]++
			case err != nil:
				answers["no answer"]++
			}
			sent = append(sent, id)
			time.Sleep(200 * time.Millisecond)
		}
		if err := s.C.Net.Unblackhole(f, peers...); err != nil {
			return err
		}
		s.minority = append(s.minority, sent...)
		s.Logf("nemesis: %d submissions to the isolated %s, none answered with an intent: %v", len(sent), f, answers)
		return nil
	}
}

// partitionLeader takes the leader's veth down for hold: the majority side
// elects a new leader and goes on; healed, the old leader follows it.
func partitionLeader(hold time.Duration) func(context.Context, *Suite, *Load, *Report) error {
	return func(ctx context.Context, s *Suite, l *Load, r *Report) error {
		leader, err := s.C.WaitLeader(ctx, 60*time.Second)
		if err != nil {
			return err
		}
		s.waitAcked(l, 15)
		name := ServerNames[leader]
		s.Logf("nemesis: cut the leader %s's link for %s", name, hold)
		if err := s.C.Net.Cut(name); err != nil {
			return err
		}
		r.Faults++
		began := time.Now()
		other, err := s.newLeader(ctx, leader, hold+20*time.Second)
		if err != nil {
			s.C.Net.Heal(name)
			return err
		}
		s.Logf("nemesis: the majority elected %s after %s", ServerNames[other], time.Since(began).Round(time.Millisecond))
		time.Sleep(time.Until(began.Add(hold)))
		return s.C.Net.Heal(name)
	}
}

// restartAll kills every server with SIGKILL and starts them all again.
func restartAll(ctx context.Context, s *Suite, l *Load, r *Report) error {
	s.waitAcked(l, 15)
	s.Logf("nemesis: kill -9 every server, then start them all")
	for _, p := range s.C.Servers {
		p.Kill()
	}
	r.Faults++
	time.Sleep(time.Second)
	for _, p := range s.C.Servers {
		if err := p.Start(); err != nil {
			return err
		}
	}
	if _, err := s.C.WaitLeader(ctx, 90*time.Second); err != nil {
		return err
	}
	return s.C.WaitAgents(ctx, 90*time.Second)
}

// newLeader waits until a server other than old names a leader other than
// old, and returns that leader.
func (s *Suite) newLeader(ctx context.Context, old int, d time.Duration) (int, error) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for i := range s.C.Servers {
			if i == old {
				continue
			}
			h, err := s.C.Health(ctx, i)
			l, _ := h["leader"].(string)
			if err != nil || l == "" || l == ServerNames[old] {
				continue
			}
			for k, n := range ServerNames {
				if n == l {
					return k, nil
				}
			}
		}
	}
	return -1, fmt.Errorf("faults: no leader other than %s within %s", ServerNames[old], d)
}

// onceFor submits an intent once to cl, recording it in the history; it
// returns the intent id answered, "" for none. The intent runs on node
// and lasts until waitFor exists (see signFor).
func (l *Load) onceFor(ctx context.Context, cl *client.Client, key, id, node, waitFor string, timeout time.Duration) string {
	answered, _ := l.onceErr(ctx, cl, key, id, node, waitFor, timeout, 0)
	return answered
}

// onceErr is onceFor that also returns the submission's error; the server
// waits up to wait for the intent's final state.
func (l *Load) onceErr(ctx context.Context, cl *client.Client, key, id, node, waitFor string, timeout, wait time.Duration) (string, error) {
	body, expires := l.signFor(key, id, node, waitFor)
	l.mu.Lock()
	l.keys = append(l.keys, key)
	l.ids[key] = append(l.ids[key], id)
	l.bodies[id], l.expires[id] = body, expires
	l.mu.Unlock()
	call := l.ts()
	c, cancel := context.WithTimeout(ctx, timeout)
	a, err := cl.Submit(c, body, nil, wait)
	cancel()
	out, ret := Op{Key: key, ID: id}, l.ts()
	if err == nil {
		out.Answered, out.Unbound = a.IntentID, a.State == "rejected"
	} else {
		// Even a definite refusal is recorded as unknown: the model allows
		// both outcomes, and the suite checks admission on its own.
		out.Unknown, ret = true, math.MaxInt64
	}
	l.mu.Lock()
	l.history = append(l.history, Operation(l.cfg.Workers+1, Op{Key: key, ID: id}, out, call, ret))
	l.mu.Unlock()
	return out.Answered, err
}
