//go:build !linux

package bwrap

import (
	"errors"
	"os"
)

var errGone = errors.New("bwrap: the sandbox ended in its setup")

// awaitBlock: bwrap runs on Linux only.
func awaitBlock(*os.File, int) error { return errors.New("bwrap: Linux only") }
