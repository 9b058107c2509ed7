//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// platformOp runs the operations that need processes and /proc.
func platformOp(p params) bool {
	switch p.Op {
	case "fds":
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			fail("fds: %v", err)
		}
		// Skip the descriptor ReadDir used for the directory itself, the Go
		// runtime's own poller (epoll and eventfd) and the cgroup files the
		// runtime keeps open to follow its CPU quota.
		var fds []string
		for _, e := range entries {
			target, _ := os.Readlink("/proc/self/fd/" + e.Name())
			if strings.Contains(target, "/fd") || target == "" || strings.HasPrefix(target, "anon_inode:[event") ||
				strings.HasPrefix(target, "/sys/fs/cgroup/") {
				continue
			}
			fds = append(fds, e.Name())
		}
		fmt.Print(strings.Join(fds, " "))
	case "spawn":
		// A grandchild in its own session that tries to outlive the tool
		// and, if it does, leaves a file in the workspace.
		cmd := exec.Command("/proc/self/exe")
		cmd.Stdin = strings.NewReader(`{"op":"linger","ms":` + fmt.Sprint(p.MS) + `,"path":"` + p.Path + `"}`)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fail("spawn: %v", err)
		}
		fmt.Print(cmd.Process.Pid)
	case "linger":
		signalIgnore()
		time.Sleep(time.Duration(p.MS) * time.Millisecond)
		os.WriteFile(p.Path, []byte("alive"), 0o644)
	case "forkbomb":
		n := 0
		for ; n < 10000; n++ {
			cmd := exec.Command("/proc/self/exe")
			cmd.Stdin = strings.NewReader(`{"op":"sleep","ms":3000}`)
			if cmd.Start() != nil {
				break
			}
		}
		fmt.Print(n)
	default:
		return false
	}
	return true
}

// signalIgnore makes the grandchild deaf to every signal it can ignore:
// only SIGKILL of the whole group, session or cgroup gets it.
func signalIgnore() {
	signal.Ignore(syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT, syscall.SIGPIPE, syscall.SIGQUIT)
}
