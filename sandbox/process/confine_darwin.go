package process

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/internal/proc"
)

// sandboxExec is macOS's seatbelt launcher.
const sandboxExec = "/usr/bin/sandbox-exec"

// macSystemPaths are what a macOS program needs to read to start.
var macSystemPaths = []string{"/usr/lib", "/usr/share", "/System", "/Library/Preferences", "/private/var/db/dyld", "/dev"}

func (d *Driver) confinementAvailable() error {
	if !d.cfg.ConfineFilesystem {
		return nil
	}
	if _, err := os.Stat(sandboxExec); err != nil {
		return fmt.Errorf("%w: %s missing: %v", sandbox.ErrUnavailable, sandboxExec, err)
	}
	return nil
}

func (d *Driver) probe(spec proc.Spec) (sandbox.Outcome, error) {
	_, _ = d.confine(&spec, sandbox.Manifest{}, spec.Path, os.TempDir())
	return proc.Run(context.Background(), spec)
}

// Confinement says how the filesystem is confined.
func (d *Driver) Confinement() string {
	if !d.cfg.ConfineFilesystem {
		return "none"
	}
	return "sandbox-exec"
}

// confine wraps the tool in sandbox-exec with its profile. A network
// allowlist gets the egress proxy on an ephemeral port of the host's
// loopback, the only place the profile lets the tool connect to (HTTP
// CONNECT only: there is no namespace to hold per-port listeners).
func (d *Driver) confine(spec *proc.Spec, m sandbox.Manifest, exe, workspace string) (func() *sandbox.EgressAudit, error) {
	done := func() *sandbox.EgressAudit { return nil }
	sb := seatbelt{Exe: exe, ReadOnly: slices.Concat(macSystemPaths, d.cfg.SystemPaths, m.ReadOnly),
		Workspace: workspace, Writable: d.cfg.ReadWrite, Devices: d.cfg.Devices}
	if len(m.Network) > 0 {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		s, err := d.proxy.Serve(ln, m.Network)
		if err != nil {
			ln.Close()
			return nil, err
		}
		sb.ProxyPort = ln.Addr().(*net.TCPAddr).Port
		spec.Env = append(spec.Env, s.Env()...)
		done = func() *sandbox.EgressAudit { s.Close(); return s.Audit() }
	}
	if d.cfg.ConfineFilesystem {
		spec.Wrapper = []string{sandboxExec, "-p", sb.Profile(), "--"}
	}
	return done, nil
}

// filterProgram: seccomp is Linux's.
func filterProgram() []byte { return nil }

// isolate: pid namespaces are Linux's.
func (d *Driver) isolate(*proc.Spec) {}
