package bwrap

import (
	"path/filepath"
	"strconv"

	"github.com/writhq/writ/sandbox"
)

// Descriptors bwrap reads, in the order of exec.Cmd.ExtraFiles: the
// inspected executable (bound, then closed), the seccomp program, the
// workspace directory when bwrap runs as the agent's own user (bound, then
// closed; a root agent shows it to the run-as user at StageDir instead, since
// bwrap resolves a bind's source path and that user cannot walk the agent's
// private directories), the /etc/hosts of a tool with a network
// allowlist, and the two pipes of the sandbox's start (join.go).
const (
	exeFD       = 3
	seccompFD   = 4
	workspaceFD = 5
	hostsFD     = 6
	infoFD      = 7
	blockFD     = 8
)

// Namespaces are the bwrap options that isolate a tool, shared with the
// raw baseline of the benchmark so that both pay for the same namespaces.
func Namespaces(uid, gid int) []string {
	return []string{
		"--unshare-all", "--unshare-user", "--unshare-pid",
		"--uid", strconv.Itoa(uid), "--gid", strconv.Itoa(gid),
		"--new-session", "--die-with-parent", "--cap-drop", "ALL",
		"--hostname", "writ",
	}
}

// args builds the whole bwrap command line. Every value is its own argv
// element: nothing is parsed by a shell.
// staged is the workspace's path for bwrap, "" to bind it from workspaceFD;
// with mirror the workspace is instead a tmpfs of limits.disk_bytes, which
// the agent fills while the sandbox is held (workspace.Mirror).
func (d *Driver) args(m sandbox.Manifest, argv, env []string, network bool, staged string, mirror bool) []string {
	a := append([]string{d.bin}, Namespaces(d.cfg.UID, d.cfg.GID)...)
	if network {
		// Keep the namespace bwrap was started in: the egress proxy's.
		a = append(a, "--share-net")
	}
	a = append(a, "--clearenv", "--seccomp", strconv.Itoa(seccompFD),
		"--info-fd", strconv.Itoa(infoFD), "--block-fd", strconv.Itoa(blockFD))
	for _, kv := range env {
		k, v, _ := cut(kv)
		a = append(a, "--setenv", k, v)
	}
	// Mounts in order: the fresh ones first, so that the binds below may
	// sit inside them (a tool under /tmp on the host stays visible).
	a = append(a,
		"--proc", "/proc",
		"--dev", "/dev",
		"--size", strconv.FormatInt(tmpSize(m.Limits), 10), "--tmpfs", "/tmp",
	)
	for _, p := range m.ReadOnly {
		a = append(a, "--ro-bind", p, p)
	}
	if network {
		a = append(a, "--ro-bind-data", strconv.Itoa(hostsFD), "/etc/hosts")
	}
	a = append(a,
		"--ro-bind-fd", strconv.Itoa(exeFD), m.Command.Path,
	)
	// bwrap mounts every bind nosuid: a setuid bit set in the workspace
	// does nothing inside, and Reclaim clears it after.
	switch {
	case mirror:
		a = append(a, "--size", strconv.FormatInt(m.Limits.DiskBytes, 10), "--tmpfs", d.cfg.WorkspaceDir)
	case staged != "":
		a = append(a, "--bind", staged, d.cfg.WorkspaceDir)
	default:
		a = append(a, "--bind-fd", strconv.Itoa(workspaceFD), d.cfg.WorkspaceDir)
	}
	a = append(a,
		"--chdir", d.cfg.WorkspaceDir,
		// Everything else in the root is bwrap's own empty tmpfs: make it
		// read-only so that nothing is written outside /tmp and the workspace.
		"--remount-ro", "/",
		"--",
	)
	return append(a, argv...)
}

// tmpSize bounds /tmp, whose pages count as the tool's memory anyway.
func tmpSize(l sandbox.Limits) int64 {
	return min(l.MemoryBytes, 64<<20)
}

func cut(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// overlaps reports whether p is the workspace mount point, below it, or an
// ancestor of it: a bind there would hide it or be hidden by it.
func overlaps(p, ws string) bool {
	rel, err := filepath.Rel(ws, p)
	if err == nil && (rel == "." || !filepath.IsAbs(rel) && len(rel) >= 2 && rel[:2] != "..") {
		return true
	}
	rel, err = filepath.Rel(p, ws)
	return err == nil && (rel == "." || len(rel) >= 2 && rel[:2] != "..")
}
