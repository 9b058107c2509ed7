package sandboxtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// inTerminalEnv marks a test binary that escapeTTY started again in a
// session of its own whose controlling terminal is a pseudo-terminal, as
// an agent started from a shell would have.
const inTerminalEnv = "WRIT_SANDBOXTEST_IN_TERMINAL"

// terminalMarker is what the test in the terminal logs once it checked
// that it holds a controlling terminal and that the tool could not open it.
const terminalMarker = "WRIT-TOOL-HAD-NO-TERMINAL"

// inTerminal reports whether this process is the one started by
// inTerminalRerun.
func inTerminal() bool { return os.Getenv(inTerminalEnv) == "1" }

// inTerminalRerun runs the current test again in a new test process whose
// session has a pseudo-terminal as its controlling terminal, and fails
// unless that test ran its terminal half and passed.
func inTerminalRerun(t *testing.T) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		missingOnHost(t, fmt.Sprintf("no pseudo-terminal: %v", err))
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pts.Close()
	// Whatever reaches the terminal is drained (and would be a finding).
	var echoed bytes.Buffer
	drained := make(chan struct{})
	go func() { _, _ = echoed.ReadFrom(ptmx); close(drained) }()

	var parts []string
	for _, p := range strings.Split(t.Name(), "/") {
		parts = append(parts, "^"+regexp.QuoteMeta(p)+"$")
	}
	var out bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run", strings.Join(parts, "/"), "-test.count=1", "-test.v", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), inTerminalEnv+"=1", builtEnv+"="+builtList())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	err = cmd.Run()
	pts.Close()
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		ptmx.Close()
		<-drained
	}
	if err != nil || !strings.Contains(out.String(), terminalMarker) {
		t.Fatalf("the test in a terminal session failed (%v):\n%s", err, out.String())
	}
	if echoed.Len() > 0 {
		t.Errorf("something wrote to the agent's terminal: %q", echoed.String())
	}
}

// requireTerminal fails unless this process has a controlling terminal.
func requireTerminal(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("started to hold a controlling terminal, but /dev/tty: %v", err)
	}
	f.Close()
}
