package faults

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestSweep: Sweep removes the namespaces of a run whose process is gone,
// with the processes in them, and leaves those of a run still going.
func TestSweep(t *testing.T) {
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: the fault suite must run)", err)
		}
		t.Skip(err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("%s%d-sweep", NamePrefix, gone.Process.Pid)
	live := fmt.Sprintf("%s%d-sweep", NamePrefix, os.Getpid())
	for _, ns := range []string{stale, live} {
		if err := ip("netns", "add", ns); err != nil {
			t.Fatal(err)
		}
	}
	defer removeNS(live)
	defer removeNS(stale)
	// A process left running in the stale namespace.
	sleeper := exec.Command("ip", "netns", "exec", stale, "sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- sleeper.Wait() }()
	for {
		if out, _ := exec.Command("ip", "netns", "pids", stale).Output(); len(strings.TrimSpace(string(out))) > 0 {
			break
		}
		select {
		case err := <-waited:
			t.Fatalf("the process in the stale namespace ended before the sweep: %v", err)
		default:
		}
	}
	Sweep()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	list := string(out)
	if strings.Contains(list, stale) {
		t.Errorf("Sweep left %s, whose run is gone", stale)
	}
	if !strings.Contains(list, live) {
		t.Errorf("Sweep removed %s, whose run is going", live)
	}
	if err := <-waited; err == nil {
		t.Error("the process in the stale namespace exited normally; Sweep should have killed it")
	}
}
