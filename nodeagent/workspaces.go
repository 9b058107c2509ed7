package nodeagent

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/writhq/writ/sandbox"
)

// workspacePrefix begins the name of every run's workspace in WorkDir.
const workspacePrefix = "run-"

// workspaces makes each run's fresh workspace in the agent's WorkDir and
// removes it after the run. One that no tool ever saw — the tier mounted
// an empty tmpfs over it, which held everything the tool wrote and is gone
// (sandbox.Outcome.WorkspaceUntouched) — is still empty and as it was
// made: it is kept for a later run instead, at most one per slot, sparing
// that run the directory's making and removal (on ext4 a fifth of a
// millisecond of CPU; docs/performance.md). What a crash leaves, kept or
// not, is removed when the agent starts (removeWorkspaces).
type workspaces struct {
	dir string
	max int
	log *slog.Logger

	mu     sync.Mutex
	spare  []string
	closed bool
}

// take returns an empty workspace for a run: a spare one, or a new one.
func (w *workspaces) take() (string, error) {
	w.mu.Lock()
	if n := len(w.spare); n > 0 {
		ws := w.spare[n-1]
		w.spare = w.spare[:n-1]
		w.mu.Unlock()
		return ws, nil
	}
	w.mu.Unlock()
	ws, err := os.MkdirTemp(w.dir, workspacePrefix)
	if err != nil {
		return "", err
	}
	// WorkDir is private (0700); inside it the workspace is open to the
	// tool's own uid, which in the runc tier is not the agent's.
	if err := os.Chmod(ws, 0o777); err != nil {
		w.remove(ws)
		return "", err
	}
	return ws, nil
}

// give ends a run's use of ws: kept for a later run when the tool never
// saw it and a spare place is free, removed otherwise.
func (w *workspaces) give(ws string, untouched bool) {
	if untouched {
		w.mu.Lock()
		keep := !w.closed && len(w.spare) < w.max
		if keep {
			w.spare = append(w.spare, ws)
		}
		w.mu.Unlock()
		if keep {
			return
		}
	}
	w.remove(ws)
}

// close removes the spare workspaces; later ones given back are removed.
func (w *workspaces) close() {
	w.mu.Lock()
	spare := w.spare
	w.spare, w.closed = nil, true
	w.mu.Unlock()
	for _, ws := range spare {
		w.remove(ws)
	}
}

// remove removes a run's workspace. One a tier left mounted (its unmount
// failed) is released first, so that neither the mount nor what the tool
// wrote in it outlives the run; what cannot be removed is logged, and the
// agent's next start removes it (removeWorkspaces).
func (w *workspaces) remove(ws string) {
	err := os.RemoveAll(ws)
	if err != nil {
		if rerr := sandbox.ReleaseWorkspace(ws); rerr == nil {
			err = os.RemoveAll(ws)
		}
	}
	if err != nil {
		w.log.Warn("workspace not removed; the agent's next start removes it", "workspace", ws, "err", err)
	}
}

// removeWorkspaces removes the workspaces left in dir by runs that a crash
// cut short, and the spare ones it left.
func removeWorkspaces(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), workspacePrefix) {
			if err := sandbox.ReleaseWorkspace(filepath.Join(dir, e.Name())); err != nil {
				return n, err
			}
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}
