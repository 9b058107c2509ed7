package nodeagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/writhq/writ/nodeagent/internal/store"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
)

// MaxResultOutput bounds the output a node keeps and sends beside a result,
// whatever the tool's output limit (protocol.MaxCapturedBytes: the control
// plane keeps it in every replica's memory, and the result frame carries it
// as base64, far below protocol.MaxFrameBytes). output_hash and
// output_bytes still cover everything the tool wrote; captured_hash and
// captured_bytes what was kept.
const MaxResultOutput = protocol.MaxCapturedBytes

// run claims the verified dispatch's nonce and journals it, in one durable
// step, then runs its tool once, sends the signed result and completes the
// journal entry with it. A nonce seen before is refused with replayed_nonce. The
// nonce is remembered for the allowed clock skew past the dispatch's expiry.
func (x *Executor) run(d *protocol.Dispatch, raw []byte, e Entry) error {
	stop, ctx, ok := x.startRun(d.ID)
	if !ok {
		return x.canceledBeforeStart(d)
	}
	defer x.endRun(d.ID, stop)
	startedAt := x.now()
	expires, _ := protocol.ParseTime(d.ExpiresAt) // verified
	begin := func() error {
		return x.cfg.Store.Begin(store.Started{DispatchID: d.ID, IntentID: d.IntentID, Nonce: d.Nonce,
			ExpiresAt: expires, StartedAt: startedAt, Dispatch: raw, NonceUntil: expires.Add(x.cfg.Verifier.Config().Skew)})
	}
	// From the journal entry on the tool may be running: a crash leaves the
	// entry, and Recover reports the run as unknown. The run is prepared
	// while the entry is committed (its workspace, its limits; a tier that
	// can prepare without starting the tool, sandbox.Gated, such as wasm,
	// instantiates it too), and the tool starts only once the entry is
	// durable: gate waits for the commit, and fails if it did.
	var (
		out      sandbox.Outcome
		ws       string
		beginErr error
		once     sync.Once
	)
	begun := make(chan error, 1)
	go func() { begun <- begin() }()
	gate := func() error {
		once.Do(func() { beginErr = <-begun })
		return beginErr
	}
	g, _ := x.cfg.Tiers.Drivers[d.Sandbox].(sandbox.Gated)
	out, ws = x.invoke(ctx, d, e, g, gate)
	gate() // if the run was refused before it was called
	canceled := x.endRun(d.ID, stop)
	if ws != "" {
		defer x.workspaces.give(ws, out.WorkspaceUntouched)
	}
	switch {
	case errors.Is(beginErr, store.ErrAlreadyStarted) || errors.Is(beginErr, store.ErrQueued):
		return nil
	case errors.Is(beginErr, store.ErrReplayed):
		return x.refuse(d, raw, nodeError(protocol.CodeReplayedNonce, "nonce %q was seen in an earlier dispatch", d.Nonce))
	case beginErr != nil:
		return beginErr
	}
	finishedAt := x.now()
	if finishedAt.Before(startedAt) {
		finishedAt = startedAt
	}
	r := x.newResult(d.ID, d.IntentID)
	captured := fillFromOutcome(r, out)
	r.StartedAt, r.FinishedAt = formatTime(startedAt), formatTime(finishedAt)
	fillAttest(r, out)
	if canceled {
		markCanceled(r, out)
	}
	b, err := x.sign(r)
	if err != nil {
		return err
	}
	// Sent while it is committed; see ExecutorConfig.OnResult.
	x.mu.Lock()
	x.completing[d.ID] = false
	x.mu.Unlock()
	x.notify(d.ID, b, captured)
	err = x.cfg.Store.Complete(d.ID, b, captured)
	x.mu.Lock()
	acked := x.completing[d.ID]
	delete(x.completing, d.ID)
	x.mu.Unlock()
	if err != nil {
		return err
	}
	if acked {
		if err := x.cfg.Store.Ack(d.ID); err != nil {
			return err
		}
	}
	x.log.Info("dispatch ran", "dispatch", d.ID, "intent", d.IntentID, "tool", d.Tool, "tier", out.Tier,
		"status", r.Status, "exit_code", r.ExitCode, "reason", out.Reason, "wall", out.Usage.Wall)
	x.logEgress(d, out)
	return nil
}

// invoke runs the tool in a fresh workspace, and returns how it ended and
// the workspace, for the caller to remove once the result is on its way.
// Cancelling ctx stops the tool (Executor.Close, Executor.Cancel).
// A failure to make the workspace, or a driver error that is not a
// refusal, becomes an Outcome. The tool starts only once gate returns nil:
// a gated tier (g set) calls it itself, once the run is prepared; any other
// tier is started after it. A refusal before the tool would start may
// return without calling gate.
func (x *Executor) invoke(ctx context.Context, d *protocol.Dispatch, e Entry, g sandbox.Gated, gate func() error) (out sandbox.Outcome, ws string) {
	ws, err := x.workspaces.take()
	if err != nil {
		out, _ := sandbox.Refuse(d.Sandbox, fmt.Errorf("workspace: %v", err))
		return out, ""
	}
	m := e.Manifest.WithDefaults()
	m.Limits = tighten(m.Limits, d.Limits)
	if max := cmp.Or(x.cfg.MaxDiskBytes, DefaultMaxDiskBytes); m.Limits.DiskBytes > max {
		out, _ := sandbox.Refuse(d.Sandbox, fmt.Errorf("limits.disk_bytes %d is above this agent's max_disk_bytes %d", m.Limits.DiskBytes, max))
		return out, ws
	}
	// The workspace is fresh and removed unread after the run: a scratch one.
	inv := sandbox.Invocation{Manifest: m, Params: []byte(d.Params), Workspace: ws, Scratch: true, Env: x.cfg.Env}
	switch {
	case g != nil:
		out, err = g.RunGated(ctx, inv, gate)
	case gate() != nil:
		// Not journaled: nothing runs, and the caller reports why.
		return sandbox.Outcome{Tier: d.Sandbox}, ws
	default:
		out, err = x.cfg.Tiers.Drivers[d.Sandbox].Run(ctx, inv)
	}
	if err != nil && !errors.Is(err, sandbox.ErrRefused) {
		// The Driver contract says this does not happen; if it does, the
		// tool may have started, so it is an error, not a refusal.
		return sandbox.Outcome{Status: sandbox.StatusError, ExitCode: -1, Tier: d.Sandbox, Reason: err.Error()}, ws
	}
	if out.Tier == "" {
		out.Tier = d.Sandbox
	}
	return out, ws
}

// tighten applies a dispatch's non-zero limits to a manifest's filled-in
// limits, only where they are stricter: a dispatch never loosens what the
// node owner's manifest allows. CPU is enforced in whole seconds, rounded up.
func tighten(l sandbox.Limits, d protocol.Limits) sandbox.Limits {
	lower := func(v *int64, to int64) {
		if to > 0 && to < *v {
			*v = to
		}
	}
	lower(&l.TimeoutMS, d.TimeoutMS)
	lower(&l.MemoryBytes, d.MemoryBytes)
	lower(&l.OutputBytes, d.OutputBytes)
	lower(&l.Pids, d.Pids)
	if d.CPUMS > 0 {
		lower(&l.CPUSeconds, int64(math.Ceil(float64(d.CPUMS)/1000)))
	}
	return l
}

// fillFromOutcome writes how the tool ended into r, and returns the captured
// output r commits to: what the node sends beside it.
func fillFromOutcome(r *protocol.Result, out sandbox.Outcome) []byte {
	r.ExitCode, r.Sandbox = out.ExitCode, out.Tier
	outputHash, outputBytes := out.OutputHash, out.OutputBytes
	if outputHash == "" {
		// A run that never started has an empty output.
		outputHash, outputBytes = protocol.HashBytes(out.Output), int64(len(out.Output))
	}
	switch out.Status {
	case sandbox.StatusOK:
		r.Status = protocol.StatusOK
	case sandbox.StatusTimeout:
		r.Status = protocol.StatusTimeout
	case sandbox.StatusOutputLimit:
		r.Status = protocol.StatusOutputLimit
	case sandbox.StatusDiskLimit:
		r.Status = protocol.StatusDiskLimit
	case sandbox.StatusRefused:
		r.Status, r.ExitCode = protocol.StatusRefused, -1
		r.Error = string(protocol.CodeSandboxRefused) + ": " + out.Reason
	default:
		r.Status = protocol.StatusError
	}
	if r.Error == "" && r.Status != protocol.StatusOK && out.Reason != "" {
		// Why, when the tier knows more than an exit code: "timeout: wall"
		// or "timeout: cpu", a signal, a tool that could not be started.
		r.Error = r.Status + ": " + out.Reason
	}
	output := out.Output
	truncated := out.Truncated
	if len(output) > MaxResultOutput {
		cut := output[:MaxResultOutput]
		if utf8.Valid(output) {
			for len(cut) > 0 && !utf8.RuneStart(output[len(cut)]) {
				cut = cut[:len(cut)-1]
			}
		}
		output, truncated = cut, true
	}
	r.SetCaptured(outputHash, outputBytes, output, truncated)
	return output
}

// newResult starts a writ.result/v2 with no output: what a refusal or an
// interrupted run reports.
func (x *Executor) newResult(dispatchID, intentID string) *protocol.Result {
	r := &protocol.Result{Type: protocol.ResultTypeV2, DispatchID: dispatchID, IntentID: intentID,
		Node: x.cfg.NodeID, KeyID: x.cfg.NodeID}
	r.SetCaptured(protocol.HashBytes(nil), 0, nil, false)
	return r
}

// sign signs r with the node key and encodes it in canonical form, which
// spares the server canonicalizing it again.
func (x *Executor) sign(r *protocol.Result) ([]byte, error) {
	b, err := r.SignCanonical(x.cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("nodeagent: sign result of %s: %w", r.DispatchID, err)
	}
	return b, nil
}

// formatTime writes a result timestamp: RFC 3339, UTC, milliseconds.
func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func mkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}
