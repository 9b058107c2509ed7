//go:build !linux

package runc

import (
	"errors"
	"io"
)

// unpacker needs openat2, which only Linux has; so does the runc tier.
type unpacker struct{}

func newUnpacker(string, int64) (*unpacker, error) {
	return nil, errors.New("runc: images unpack on Linux only")
}

func (u *unpacker) Close() error          { return nil }
func (u *unpacker) apply(io.Reader) error { return errors.New("runc: Linux only") }
