package gvisor

import (
	"fmt"
	"strings"

	"github.com/writhq/writ/sandbox/runc"
)

// probe returns the platform to use: cfg.Platform if a container runs with
// it, or else the first of Platforms that runs one (runc.ProbeContainer).
func probe(bin, state string, cfg Config) (string, error) {
	candidates := Platforms
	if cfg.Platform != "" {
		candidates = []string{cfg.Platform}
	}
	var errs []string
	for _, p := range candidates {
		global := append([]string{"--root", state}, flags(p, false)...)
		err := runc.ProbeContainer(cfg.OCI, bin, global, cfg.ProbeTimeout)
		if err == nil {
			return p, nil
		}
		errs = append(errs, fmt.Sprintf("platform %s: %v", p, err))
	}
	return "", fmt.Errorf("runsc runs no container on this host: %s", strings.Join(errs, "; "))
}
