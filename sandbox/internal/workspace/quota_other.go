//go:build !linux

package workspace

import (
	"context"
	"errors"
	"os"
)

// Quota bounds a workspace; only Linux has one (tmpfs).
type Quota struct{}

// Enforced is false: nothing bounds the workspace here.
func (q *Quota) Enforced() bool { return false }

// Limit bounds nothing outside Linux.
func Limit(string, int64) (*Quota, error) { return &Quota{}, nil }

// LimitScratch bounds nothing outside Linux.
func LimitScratch(string, int64) (*Quota, error) { return &Quota{}, nil }

// Fresh is false: there is no tmpfs.
func (q *Quota) Fresh() bool { return false }

// Discarded is false: no tmpfs was mounted.
func (q *Quota) Discarded() bool { return false }

// Full is always false.
func (q *Quota) Full() bool { return false }

// Watch watches nothing.
func (q *Quota) Watch(ctx context.Context) (context.Context, func() bool) {
	return ctx, func() bool { return false }
}

// Close hands back nothing.
func (q *Quota) Close() error { return nil }

// HandBack stops the watch.
func (q *Quota) HandBack(stop func() bool) (bool, error) { return stop(), nil }

// Release releases nothing.
func Release(string) error { return nil }

// Mirror bounds a workspace inside a sandbox's tmpfs; only Linux has one.
type Mirror struct{}

// NewMirror returns a Mirror that bounds nothing.
func NewMirror(string, int64) *Mirror { return &Mirror{} }

// Fill refuses: no sandbox mounts a tmpfs outside Linux.
func (m *Mirror) Fill(*os.File, uint64, string) error {
	return errors.New("workspace: mirror: Linux only")
}

// Full is always false.
func (m *Mirror) Full() bool { return false }

// Watch watches nothing.
func (m *Mirror) Watch(ctx context.Context) (context.Context, func() bool) {
	return ctx, func() bool { return false }
}

// HandBack stops the watch.
func (m *Mirror) HandBack(stop func() bool) (bool, error) { return stop(), nil }

// Close hands back nothing.
func (m *Mirror) Close() error { return nil }

// Private bounds a workspace with a tmpfs mounted nowhere; only Linux has one.
type Private struct{}

// NewPrivate refuses outside Linux.
func NewPrivate(string, int64, int, int) (*Private, error) {
	return nil, errors.New("workspace: private tmpfs: Linux only")
}

// MountFD is nil.
func (p *Private) MountFD() *os.File { return nil }

// Watch watches nothing.
func (p *Private) Watch(ctx context.Context) (context.Context, func() bool) {
	return ctx, func() bool { return false }
}

// HandBack stops the watch.
func (p *Private) HandBack(stop func() bool) (bool, error) { return stop(), nil }

// Close hands back nothing.
func (p *Private) Close() error { return nil }
