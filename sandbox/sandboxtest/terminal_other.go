//go:build !linux

package sandboxtest

import "testing"

const terminalMarker = "WRIT-TOOL-HAD-NO-TERMINAL"

func inTerminal() bool { return false }

// inTerminalRerun is Linux-only: elsewhere the case runs without a
// controlling terminal only.
func inTerminalRerun(t *testing.T) {
	t.Log("no controlling-terminal rerun on this system")
}

func requireTerminal(t *testing.T) {}
