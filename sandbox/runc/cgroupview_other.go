//go:build !linux

package runc

import (
	"errors"
	"os/exec"
)

func hybridUnified() string { return "" }

func startHidden(cmd *exec.Cmd, hide string) error {
	if hide != "" {
		return errors.New("runc: hiding a mount needs Linux")
	}
	return cmd.Start()
}
