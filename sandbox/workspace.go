package sandbox

import (
	"fmt"

	"github.com/writhq/writ/sandbox/internal/workspace"
)

// ReleaseWorkspace frees what bounds a workspace's size (limits.disk_bytes:
// the tmpfs a tier mounts on it for the length of a run, for a root agent)
// when a crash cut the run short and left it, and everything in it; it does
// nothing to a directory without one. Tiers hand the workspace back
// themselves at the end of every run.
func ReleaseWorkspace(dir string) error { return workspace.Release(dir) }

// DiskLimited returns out with status disk_limit when the tool filled its
// workspace (filled) and did not end well anyway: a tier stops a tool whose
// workspace is full, which would otherwise read as an error or a cancel.
func DiskLimited(out Outcome, filled bool, limit int64) Outcome {
	if filled && out.Status != StatusOK && out.Status != StatusRefused {
		out.Status, out.Reason = StatusDiskLimit, fmt.Sprintf("workspace above %d bytes", limit)
	}
	return out
}
