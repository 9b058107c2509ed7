//go:build !linux

package landlock

import "errors"

// ErrUnsupported means this system has no Landlock.
var ErrUnsupported = errors.New("landlock: not supported on this system")

// Rules is what a confined thread keeps.
type Rules struct {
	ReadExec, ReadWrite, Devices []string
	ConnectTCP                   []int
}

// ABI returns ErrUnsupported.
func ABI() (int, error) { return 0, ErrUnsupported }

// RestrictThread returns ErrUnsupported.
func RestrictThread(Rules) error { return ErrUnsupported }
