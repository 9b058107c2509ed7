package sandboxtest_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/internal/testtier"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/process"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

// TestAttacksWork is the negative control of the escape suite: run on the
// process tier with its filesystem confinement turned off, the attacks the
// suite uses do reach a host secret. So a tier that let them through would
// fail the suite; the suite cannot pass for want of a working attack.
func TestAttacksWork(t *testing.T) {
	testtier.Slow(t, "the escape suite's negative control")
	unconfined := process.DefaultConfig()
	unconfined.ConfineFilesystem = false
	d, err := process.New(unconfined)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, "process", d.Available())
	tool := sandboxtest.HostTool(t)
	m := sandbox.Manifest{Name: "t", Tier: sandbox.TierProcess, Command: &sandbox.Command{Path: tool}}
	// Open to every user: a root agent runs process-tier tools as another
	// uid, and this control is about what Landlock stops, not file modes.
	dir, err := os.MkdirTemp("", "writ-attacks-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	file := filepath.Join(dir, "secret")
	os.WriteFile(file, []byte("SECRET"), 0o644)
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	for name, params := range map[string]string{
		"absolute":     `{"op":"read","path":"` + file + `"}`,
		"dotdot":       `{"op":"read","path":"../secret"}`,
		"tool symlink": `{"op":"symlink","path":"link","data":"../secret"}`,
	} {
		out, err := d.Run(context.Background(), sandbox.Invocation{Manifest: m, Params: jsontext.Value(params), Workspace: ws})
		if err != nil || !strings.Contains(string(out.Output), "SECRET") {
			t.Errorf("%s: the attack did not reach the secret without isolation: %v %s %q", name, err, out.Status, out.Stderr)
		}
	}
	// And with the host's network, the connect attack reaches loopback.
	cfg := unconfined
	cfg.UnshareNetwork = false
	open, err := process.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	out, _ := open.Run(context.Background(), sandbox.Invocation{Manifest: m, Workspace: ws,
		Params: jsontext.Value(`{"op":"connect","data":"` + ln.Addr().String() + `"}`)})
	if out.Status != sandbox.StatusOK {
		t.Errorf("connect op on the host network: %s %q", out.Status, out.Stderr)
	}

	// Without a seccomp filter (run straight on the host: every tier that
	// runs it has one) the syscalls op sees other answers than EPERM
	// (ptrace: ESRCH, attaching to no process)
	// (unshare of a user namespace is EINVAL in a threaded process).
	host := exec.Command(tool)
	host.Stdin = strings.NewReader(`{"op":"syscalls"}`)
	got, _ := host.Output()
	if !strings.Contains(string(got), "ptrace=no such process") || strings.Contains(string(got), "unshare=EPERM") {
		t.Errorf("syscalls op without a filter: got %q, want ptrace to find no process (allowed) and unshare not EPERM", got)
	}

	// Straight on the host, the procs op reads another process's command
	// line, and (as root) the userns op makes a user namespace.
	other := exec.Command(tool, "--token=WRIT-OTHER-SECRET")
	other.Stdin = strings.NewReader(`{"op":"sleep","ms":30000}`)
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	procs := exec.Command(tool)
	procs.Stdin = strings.NewReader(`{"op":"procs"}`)
	if got, _ := procs.Output(); !strings.Contains(string(got), "WRIT-OTHER-SECRET") {
		t.Errorf("procs op on the host does not see another process's command line")
	}
	if os.Geteuid() == 0 {
		userns := exec.Command(tool)
		userns.Stdin = strings.NewReader(`{"op":"userns"}`)
		if got, err := userns.CombinedOutput(); err != nil || string(got) != "userns created" {
			t.Errorf("userns op on the host: %q %v, want a user namespace", got, err)
		}
	}

	os.WriteFile(filepath.Join(ws, "entry"), []byte("safe"), 0o644)
	out, _ = d.Run(context.Background(), sandbox.Invocation{Manifest: m, Params: jsontext.Value(`{"op":"race","path":"entry","bytes":10}`), Workspace: ws})
	if string(out.Output) != "leaks=0 safe=10 failed=0" {
		t.Errorf("race op on a plain file: got %q (%s %q %q)", out.Output, out.Status, out.Reason, out.Stderr)
	}
	os.Remove(filepath.Join(ws, "entry"))
	os.Symlink(file, filepath.Join(ws, "entry"))
	out, _ = d.Run(context.Background(), sandbox.Invocation{Manifest: m, Params: jsontext.Value(`{"op":"race","path":"entry","bytes":10}`), Workspace: ws})
	if !strings.Contains(string(out.Output), "LEAK") {
		t.Errorf("race op through a link: got %q, want a LEAK report", out.Output)
	}
}
