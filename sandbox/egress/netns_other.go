//go:build !linux

package egress

import (
	"fmt"
	"os"
	"runtime"
)

// inNewNetns is Linux only: elsewhere tools with a network allowlist use
// the proxy over the host's loopback (macOS sandbox-exec confines them to it).
func inNewNetns(func() error) (*os.File, error) {
	return nil, fmt.Errorf("%w on %s", ErrUnsupported, runtime.GOOS)
}
