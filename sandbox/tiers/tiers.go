// Package tiers builds a sandbox Driver from a tier name, for the callers
// that choose the tier at run time: the agent from a manifest, and
// `writ sandbox run --tier`.
package tiers

import (
	"fmt"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/bwrap"
	"github.com/writhq/writ/sandbox/gvisor"
	"github.com/writhq/writ/sandbox/process"
	"github.com/writhq/writ/sandbox/runc"
	"github.com/writhq/writ/sandbox/wasm"
)

// Config holds one configuration per tier.
type Config struct {
	Wasm    wasm.Config
	Bwrap   bwrap.Config
	Runc    runc.Config   // RootFS has no default: set it to use the runc tier
	Gvisor  gvisor.Config // OCI.RootFS likewise, for the gvisor tier
	Process process.Config
}

// DefaultConfig returns every tier's default configuration.
func DefaultConfig() Config {
	return Config{Wasm: wasm.DefaultConfig(), Bwrap: bwrap.DefaultConfig(),
		Runc: runc.DefaultConfig(), Gvisor: gvisor.DefaultConfig(), Process: process.DefaultConfig()}
}

// Names lists the tiers, strongest isolation first.
var Names = []string{sandbox.TierWasm, sandbox.TierGvisor, sandbox.TierRunc, sandbox.TierBwrap, sandbox.TierProcess}

// New returns the Driver of the named tier. An unknown name or an invalid
// configuration is an error; a tier that cannot run on this host is not —
// its Driver's Available says why, and its Run refuses.
func New(tier string, cfg Config) (sandbox.Driver, error) {
	switch tier {
	case sandbox.TierWasm:
		return wasm.New(cfg.Wasm)
	case sandbox.TierBwrap:
		return bwrap.New(cfg.Bwrap)
	case sandbox.TierRunc:
		return runc.New(cfg.Runc)
	case sandbox.TierGvisor:
		return gvisor.New(cfg.Gvisor)
	case sandbox.TierProcess:
		return process.New(cfg.Process)
	}
	return nil, fmt.Errorf("sandbox: unknown tier %q (want wasm, gvisor, runc, bwrap or process)", tier)
}
