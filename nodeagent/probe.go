package nodeagent

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/writhq/writ/nodeagent/mcptier"
	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/tiers"
)

// Tiers is what the agent found out about the sandbox tiers of this host:
// the drivers of those that work, and why the others do not. The agent
// announces Available and runs nothing in any other tier.
type Tiers struct {
	// Drivers holds a driver for every available tier, and only for those.
	Drivers map[string]sandbox.Driver
	// Available names the working tiers, strongest isolation first.
	Available []string
	// Unavailable says, for every other tier, why it cannot run here.
	Unavailable map[string]error
}

// ProbeTiers builds the driver of every tier in tiers.Names from cfg and
// asks each whether it can run tools on this host (Driver.Available, which
// starts a real sandbox where the tier can). Nothing is assumed from the
// operating system: a tier is available only if its probe succeeded. The
// mcp tier comes last, available when one of the tiers a stdio MCP server
// runs in is.
func ProbeTiers(cfg tiers.Config) *Tiers {
	drivers := make(map[string]sandbox.Driver, len(tiers.Names))
	failed := map[string]error{}
	for _, name := range tiers.Names {
		d, err := tiers.New(name, cfg)
		if err != nil {
			failed[name] = fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
			continue
		}
		drivers[name] = d
	}
	t := Probe(drivers)
	for name := range t.Unavailable {
		closeDriver(drivers[name])
	}
	for name, err := range failed {
		t.Unavailable[name] = err
	}
	// The mcp tier runs stdio MCP servers in the tiers that work here: it
	// is available when one of them can.
	inner := map[string]sandbox.Driver{}
	for _, name := range sandbox.MCPInnerTiers {
		if d, ok := t.Drivers[name]; ok {
			inner[name] = d
		}
	}
	mc := mcptier.DefaultConfig()
	mc.Inner, mc.Egress = inner, cfg.Bwrap.Egress
	m, err := mcptier.New(mc)
	if err == nil {
		err = m.Available()
	}
	if err != nil {
		t.Unavailable[sandbox.TierMCP] = fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	} else {
		t.Drivers[sandbox.TierMCP] = m
		t.Available = append(t.Available, sandbox.TierMCP)
	}
	return t
}

// Probe asks each driver, concurrently, whether it is available, and keeps
// those that are. A driver registered under a name other than its own is
// refused: a dispatch for one tier must never run in another. The drivers
// stay the caller's: Probe closes none of them.
func Probe(drivers map[string]sandbox.Driver) *Tiers {
	t := &Tiers{Drivers: map[string]sandbox.Driver{}, Unavailable: map[string]error{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, d := range drivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := d.Available()
			if err == nil && d.Name() != name {
				err = fmt.Errorf("%w: driver %q registered as tier %q", sandbox.ErrUnavailable, d.Name(), name)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Unavailable[name] = err
				return
			}
			t.Drivers[name] = d
			t.Available = append(t.Available, name)
		}()
	}
	wg.Wait()
	slices.SortFunc(t.Available, func(a, b string) int { return rank(a) - rank(b) })
	return t
}

// Has reports whether tier was probed and works.
func (t *Tiers) Has(tier string) bool {
	_, ok := t.Drivers[tier]
	return ok
}

// Close releases the available drivers that hold resources (the wasm
// runtime). Tiers from ProbeTiers own their drivers; call it once at exit.
func (t *Tiers) Close() {
	for _, d := range t.Drivers {
		closeDriver(d)
	}
}

func closeDriver(d sandbox.Driver) {
	if c, ok := d.(interface{ Close(context.Context) error }); ok {
		c.Close(context.Background())
	}
}

// rank orders tiers as tiers.Names does; unknown names go last.
func rank(tier string) int {
	if i := slices.Index(tiers.Names, tier); i >= 0 {
		return i
	}
	return len(tiers.Names)
}
