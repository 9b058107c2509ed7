package cli

import (
	"os/exec"
	"syscall"
)

// stopWithParent makes the kernel send cmd SIGTERM when the bench that
// started it dies (interrupted, killed): no server is left running.
func stopWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
