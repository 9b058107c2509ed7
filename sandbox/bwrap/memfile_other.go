//go:build !linux

package bwrap

import (
	"errors"
	"os"
)

// memfile needs Linux, as bwrap does.
func memfile(string, []byte) (*os.File, error) {
	return nil, errors.New("bwrap: Linux only")
}
