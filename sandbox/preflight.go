package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
)

// Preflight makes the checks every tier makes before it runs anything, in one
// order: the manifest (with defaults) is valid and names d's tier, d is
// available on this host, and the workspace is an absolute directory. A
// network allowlist is the tier's to honour (through the egress proxy) or
// refuse. It returns the manifest with its defaults, or the reason to refuse.
func Preflight(d Driver, inv Invocation) (Manifest, error) {
	m := inv.Manifest.WithDefaults()
	if err := m.Validate(); err != nil {
		return m, err
	}
	if m.Tier != d.Name() {
		return m, fmt.Errorf("%w: manifest is for the %s tier", ErrInvalidManifest, m.Tier)
	}
	if err := d.Available(); err != nil {
		return m, err
	}
	if !filepath.IsAbs(inv.Workspace) {
		return m, fmt.Errorf("workspace %q is not an absolute path", inv.Workspace)
	}
	if st, err := os.Stat(inv.Workspace); err != nil || !st.IsDir() {
		return m, fmt.Errorf("workspace %q is not a directory", inv.Workspace)
	}
	return m, nil
}
