package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// clockOffsetEnv names the file whose duration `writ server` adds to its
// clock, read again every 100 ms (cmd/writ/internal/cli/clockoffset.go).
// A network namespace shares the host's wall clock, and a time namespace
// offsets only the monotonic and boot clocks, so a clock jump of one server
// is made inside it: the wall clock the control plane reads moves, as in a
// step of the host's clock, and the monotonic clock Go times durations on
// does not.
const clockOffsetEnv = "WRIT_CLOCK_OFFSET_FILE"

// SetClock moves server i's clock to the host's plus offset, and waits
// until the server says its clock jumped.
func (c *Cluster) SetClock(i int, offset time.Duration) error {
	p := c.Servers[i]
	path := filepath.Join(c.cfg.Dir, p.Name+".clock")
	before := jumps(p)
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(offset.String()), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	for deadline := time.Now().Add(5 * time.Second); jumps(p) == before; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("faults: %s did not take the clock offset %s (a writ without %s?)", p.Name, offset, clockOffsetEnv)
		}
	}
	return nil
}

// jumps counts the clock jumps server p has logged.
func jumps(p *Proc) int {
	b, _ := os.ReadFile(p.log)
	return strings.Count(string(b), `"msg":"the clock jumped"`)
}

// clockJump moves the leader's clock jump behind for hold and forward
// again, then the (new) leader's jump ahead for hold and back: the leader's
// clock is the one that enters the log. Beyond the protocol's skew (30 s),
// the leader refuses an intent issued in its future, and a node a dispatch
// issued in its own. The log's clock never goes back: after the forward
// jump it stays ahead of the true time until the true time catches up, so
// the scenario ends jump after the forward jump ended. Nothing may run
// twice or be lost meanwhile.
func clockJump(hold, jump time.Duration) func(context.Context, *Suite, *Load, *Report) error {
	return func(ctx context.Context, s *Suite, l *Load, r *Report) error {
		for _, off := range []time.Duration{-jump, jump} {
			leader, err := s.C.WaitLeader(ctx, 60*time.Second)
			if err != nil {
				return err
			}
			s.waitAcked(l, 15)
			name := ServerNames[leader]
			s.Logf("nemesis: the leader %s's clock jumps %s for %s", name, off, hold)
			if err := s.C.SetClock(leader, off); err != nil {
				return err
			}
			r.Faults++
			time.Sleep(hold)
			s.Logf("nemesis: %s's clock jumps %s, to the true time", name, -off)
			if err := s.C.SetClock(leader, 0); err != nil {
				return err
			}
		}
		s.Logf("nemesis: %s until the true time reaches the log's clock", jump)
		time.Sleep(jump)
		return nil
	}
}
