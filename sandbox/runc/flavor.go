package runc

import specs "github.com/opencontainers/runtime-spec/specs-go"

// Flavor lets another tier run the runc tier's bundles with its own OCI
// runtime and name: the gvisor tier is runsc driving the same bundle. The
// zero Flavor is the runc tier itself.
type Flavor struct {
	// Tier is the name the driver reports and manifests must name; ""
	// means "runc".
	Tier string
	// Args returns the runtime's global flags (before "run", "kill" and
	// "delete"); egress is true for a container that joins the egress
	// proxy's network namespace. Nil means none.
	Args func(egress bool) []string
	// Probe, when set, runs once in Available after the runtime binary
	// answered "--version"; bin is its resolved path and state the
	// runtime's --root. It returns a note for Version (the chosen
	// platform, say), or an error that makes the tier unavailable.
	Probe func(bin, state string) (string, error)
	// Spec, when set, adjusts each container's configuration before it
	// is written.
	Spec func(*specs.Spec)
	// WatchCPU makes the driver enforce limits.cpu_seconds by watching the
	// container's cgroup, for a runtime whose tools RLIMIT_CPU does not
	// stop.
	WatchCPU bool
	// Install tells an operator how to get the runtime when it is missing.
	Install string

	view *cgroupView // crun's, set by its probe; nil for the others
}

func (f Flavor) tier() string {
	if f.Tier == "" {
		return "runc"
	}
	return f.Tier
}

func (f Flavor) args(egress bool) []string {
	if f.Args == nil {
		return nil
	}
	return f.Args(egress)
}

// NewFlavor returns a Driver that runs cfg's bundles as the tier f
// describes. New(cfg) is NewFlavor(cfg, Flavor{}).
func NewFlavor(cfg Config, f Flavor) (*Driver, error) {
	d, err := newDriver(cfg, f)
	if err != nil {
		return nil, err
	}
	if d.Available() == nil {
		d.cleanStale()
	}
	return d, nil
}

// RuntimeArgs is what Run puts between the runtime binary and "run" for a
// container without network, for running a bundle by hand.
func (d *Driver) RuntimeArgs() []string {
	return append([]string{"--root", d.StateDir()}, d.flavor.args(false)...)
}
