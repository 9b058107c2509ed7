package bwrap

import (
	"slices"
	"strings"
	"testing"

	"github.com/writhq/writ/sandbox"
)

// TestArgs checks the bwrap command line the tier builds: every namespace,
// a session of its own, death with the agent, no capabilities, a cleared
// environment, the seccomp program, fresh /proc, /dev and /tmp, read-only
// binds of what the manifest names, the workspace (bound from its
// descriptor, from its stage, or a tmpfs of disk_bytes), the read-only root, and
// the tool's argv after "--" untouched; the network is shared only with an
// allowlist (the egress proxy's namespace).
func TestArgs(t *testing.T) {
	d := &Driver{cfg: DefaultConfig(), bin: "/usr/bin/bwrap"}
	m := sandbox.Manifest{Name: "t", Tier: sandbox.TierBwrap, ReadOnly: []string{"/usr", "/etc/ssl"},
		Command: &sandbox.Command{Path: "/opt/tool"}}.WithDefaults()
	argv := []string{"/opt/tool", "--x=$(id)", "a b"}
	a := d.args(m, argv, []string{"K=v=w"}, false, "", false)
	line := " " + strings.Join(a, " ") + " "
	for _, want := range []string{
		"--unshare-all", "--unshare-user", "--unshare-pid", "--new-session", "--die-with-parent",
		"--cap-drop ALL", "--clearenv", "--seccomp 4", "--setenv K v=w", "--proc /proc", "--dev /dev",
		"--tmpfs /tmp", "--ro-bind /usr /usr", "--ro-bind /etc/ssl /etc/ssl", "--ro-bind-fd 3 /opt/tool",
		"--bind-fd 5 /workspace", "--chdir /workspace", "--remount-ro /",
	} {
		if !strings.Contains(line, " "+want+" ") {
			t.Errorf("bwrap arguments lack %q:\n%s", want, line)
		}
	}
	staged := " " + strings.Join(d.args(m, argv, nil, false, "/run/writ-agent/bwrap/ws", false), " ") + " "
	if !strings.Contains(staged, " --bind /run/writ-agent/bwrap/ws /workspace ") || strings.Contains(staged, "--bind-fd 5") {
		t.Errorf("a staged workspace is not bound from its stage:\n%s", staged)
	}
	mirror := " " + strings.Join(d.args(m, argv, nil, false, "", true), " ") + " "
	if !strings.Contains(mirror, " --size 67108864 --tmpfs /workspace ") || strings.Contains(mirror, "--bind-fd 5") {
		t.Errorf("a mirrored workspace is not a tmpfs of disk_bytes:\n%s", mirror)
	}
	if strings.Contains(line, "--share-net") {
		t.Errorf("network shared without an allowlist")
	}
	dash := slices.Index(a, "--")
	if dash < 0 || !slices.Equal(a[dash+1:], argv) {
		t.Errorf("argv after --: got %q, want %q", a[dash+1:], argv)
	}
	if !slices.Contains(d.args(m, argv, nil, true, "", false), "--share-net") {
		t.Errorf("an allowlisted tool does not join the proxy's namespace")
	}
}
