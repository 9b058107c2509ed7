package process_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/process"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

// TestRunAs: an agent running as root runs process-tier tools as the
// configured unprivileged user with no supplementary groups. The tool
// cannot read a root-only file outside its grants, nor one inside them
// (Landlock allows it there: only the user stops it), and it still works
// in a workspace that was private to root, under a private parent.
func TestRunAs(t *testing.T) {
	if os.Geteuid() != 0 {
		sandboxtest.RequireAvailable(t, "process (as root)", errors.New("the agent must be root to switch users"))
	}
	cfg := process.DefaultConfig()
	cfg.Egress = sandboxtest.EgressConfig(t)
	cfg.RunAsUID, cfg.RunAsGID = 65533, 65532 // not the defaults: the setting is what counts
	d, err := process.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, "process", d.Available())
	t.Logf("tools run as %s", d.User())
	tool := sandboxtest.HostTool(t)

	// A directory any user may read, as /usr is (t.TempDir's parent is
	// private to root).
	granted, err := os.MkdirTemp("", "writ-runas-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(granted) })
	os.Chmod(granted, 0o755)
	for name, mode := range map[string]os.FileMode{"secret": 0o600, "public": 0o644} {
		if err := os.WriteFile(filepath.Join(granted, name), []byte(name), mode); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A workspace as `writ sandbox run` and the agent make one: the
	// directory and its parent private to root.
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	runTool := func(params string) sandbox.Outcome {
		t.Helper()
		m := sandbox.Manifest{Name: "testtool", Tier: sandbox.TierProcess, ReadOnly: []string{granted},
			Command: &sandbox.Command{Path: tool}}
		o, err := d.Run(context.Background(), sandbox.Invocation{Manifest: m, Params: jsontext.Value(params), Workspace: ws})
		if err != nil {
			t.Fatalf("%s: %v", params, err)
		}
		return o
	}

	o := runTool(`{"op":"ids"}`)
	var ids struct {
		UID, EUID, GID, EGID int
		Groups               []int
	}
	if err := jsonx.UnmarshalLenient(o.Output, &ids); o.Status != sandbox.StatusOK || err != nil {
		t.Fatalf("ids: %s %q %q %v", o.Status, o.Output, o.Stderr, err)
	}
	if ids.UID != 65533 || ids.EUID != 65533 || ids.GID != 65532 || ids.EGID != 65532 || len(ids.Groups) != 0 {
		t.Fatalf("the tool runs as %s, want uid and euid 65533, gid and egid 65532, no groups", o.Output)
	}

	cases := []struct {
		path string
		ok   bool
	}{
		{filepath.Join(granted, "public"), true},
		{filepath.Join(granted, "secret"), false}, // granted by Landlock, root's by mode
		{outside, false}, // neither
		{"/etc/shadow", false},
	}
	for _, c := range cases {
		o := runTool(`{"op":"read","path":"` + c.path + `"}`)
		if got := o.Status == sandbox.StatusOK; got != c.ok {
			t.Errorf("read %s: status %s (%q), want ok=%v", c.path, o.Status, o.Stderr, c.ok)
		}
	}

	o = runTool(`{"op":"write","path":"out","data":"x"}`)
	if o.Status != sandbox.StatusOK {
		t.Fatalf("write in the workspace: %s %q", o.Status, o.Stderr)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(ws, "out"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != 65533 || st.Gid != 65532 {
		t.Errorf("the tool's file belongs to %d:%d, want 65533:65532", st.Uid, st.Gid)
	}
	if o := runTool(`{"op":"cwd"}`); string(o.Output) != ws {
		t.Errorf("cwd: got %q (%s), want %q", o.Output, o.Stderr, ws)
	}
}

func TestRunAsRootRefused(t *testing.T) {
	for _, ids := range [][2]int{{0, 65534}, {65534, 0}, {-1, 65534}, {65534, 1 << 32}} {
		cfg := process.DefaultConfig()
		cfg.RunAsUID, cfg.RunAsGID = ids[0], ids[1]
		if _, err := process.New(cfg); err == nil {
			t.Errorf("RunAsUID %d RunAsGID %d accepted", ids[0], ids[1])
		}
	}
}
