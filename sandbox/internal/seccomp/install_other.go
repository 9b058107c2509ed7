//go:build !linux

package seccomp

// InstallThread needs Linux.
func InstallThread([]byte) error { return ErrUnsupported }
