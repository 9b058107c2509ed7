package nodeagent

import (
	"errors"
	"fmt"

	"github.com/writhq/writ/nodeagent/internal/store"
	"github.com/writhq/writ/protocol"
)

// InterruptedError is the error of a run the agent cannot account for.
const InterruptedError = "interrupted: the agent restarted during the run"

// Recover reports every run that was journaled as started and never
// completed — the agent stopped during it — as a signed result with status
// unknown, and completes its journal entry. The tool is never run again:
// whether it did its work is what nobody can tell. Call it once at start,
// before the first Handle. It returns how many runs it reported.
func (x *Executor) Recover() (int, error) {
	runs, err := x.cfg.Store.Interrupted()
	if err != nil {
		return 0, err
	}
	for i, s := range runs {
		r := x.newResult(s.DispatchID, s.IntentID)
		r.Status, r.ExitCode, r.Error = protocol.StatusUnknown, -1, InterruptedError
		// The tier it was started in, when the journaled dispatch says.
		if d, err := protocol.DecodeDispatch(s.Dispatch, x.cfg.Verifier.Config().MaxBytes); err == nil {
			r.Sandbox = d.Sandbox
		}
		now := x.now()
		if now.Before(s.StartedAt) {
			now = s.StartedAt
		}
		r.StartedAt, r.FinishedAt = formatTime(s.StartedAt), formatTime(now)
		b, err := x.sign(r)
		if err != nil {
			return i, err
		}
		if err := x.cfg.Store.Complete(s.DispatchID, b, nil); err != nil && !errors.Is(err, store.ErrAlreadyCompleted) {
			return i, fmt.Errorf("nodeagent: recover %s: %w", s.DispatchID, err)
		}
		x.log.Warn("run interrupted by a restart: reported as unknown", "dispatch", s.DispatchID, "intent", s.IntentID)
		x.notify(s.DispatchID, b, nil)
	}
	return len(runs), nil
}
