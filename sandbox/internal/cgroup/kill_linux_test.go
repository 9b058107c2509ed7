package cgroup

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// pidnsEnv marks the test binary TestKillSparesReusedPid started again as
// pid 1 of new pid and mount namespaces.
const pidnsEnv = "WRIT_CGROUP_TEST_IN_PIDNS"

// TestKillSparesReusedPid: a member listed for killing that ends before
// the kill may have its pid taken by a process outside the group; the kill
// must not reach that process. In a pid namespace of its own, where it
// alone forks and can choose the next pid (ns_last_pid), the test ends the
// listed member between the listing and the kill and starts a victim with
// its pid, outside the group.
func TestKillSparesReusedPid(t *testing.T) {
	requireRoot(t)
	if os.Getenv(pidnsEnv) != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillSparesReusedPid$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), pidnsEnv+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestKillSparesReusedPid") {
			t.Fatalf("in a pid namespace: %v\n%s", err, out)
		}
		return
	}
	if err := unix.Mount("", "/", "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		t.Fatal(err)
	}
	var m *Manager
	parent := testParent(t, func() *Manager { return m })
	m, err := Detect(parent)
	requireHost(t, err)
	defer func() { afterList = func() {} }()
	for try := 0; try < 20; try++ {
		g, err := m.create(Name(), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		member := exec.Command("sleep", "60")
		if err := member.Start(); err != nil {
			t.Fatal(err)
		}
		if err := g.Add(member.Process.Pid); err != nil {
			t.Fatal(err)
		}
		var victim *exec.Cmd
		afterList = func() {
			member.Process.Kill()
			member.Wait() // reaped: its pid is free
			pid := member.Process.Pid
			if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
				t.Errorf("ns_last_pid: %v", err)
				return
			}
			victim = exec.Command("sleep", "60")
			if err := victim.Start(); err != nil {
				t.Errorf("victim: %v", err)
			}
		}
		g.killListed()
		afterList = func() {}
		g.discard()
		if victim == nil || victim.Process == nil {
			t.Fatal("the member was not listed")
		}
		// A SIGKILL the group kill sent is pending before this SIGTERM, and wins.
		victim.Process.Signal(syscall.SIGTERM)
		victim.Wait()
		if victim.Process.Pid != member.Process.Pid {
			continue // a thread of ours took the pid first
		}
		if sig := victim.ProcessState.Sys().(syscall.WaitStatus).Signal(); sig != syscall.SIGTERM {
			t.Fatalf("a process outside the group that took a listed member's pid %d died of %v", victim.Process.Pid, sig)
		}
		return
	}
	t.Fatal("no victim took the member's pid in 20 tries")
}
