//go:build !linux

package bwrap

import (
	"errors"
	"os"
)

// awaitBlock: bwrap runs on Linux only.
func awaitBlock(*os.File, int) error { return errors.New("bwrap: Linux only") }
