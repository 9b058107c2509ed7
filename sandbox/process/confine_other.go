//go:build !linux && !darwin

package process

import (
	"fmt"
	"runtime"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/internal/proc"
)

func (d *Driver) confinementAvailable() error {
	return fmt.Errorf("%w: no process confinement on %s", sandbox.ErrUnavailable, runtime.GOOS)
}

func (d *Driver) probe(spec proc.Spec) (sandbox.Outcome, error) {
	return sandbox.Outcome{}, d.confinementAvailable()
}

// Confinement says how the filesystem is confined.
func (d *Driver) Confinement() string { return "unavailable" }

func (d *Driver) confine(*proc.Spec, sandbox.Manifest, string, string) (func() *sandbox.EgressAudit, error) {
	return nil, d.confinementAvailable()
}

// filterProgram: seccomp is Linux's.
func filterProgram() []byte { return nil }

// isolate: pid namespaces are Linux's.
func (d *Driver) isolate(*proc.Spec) {}
