package main_test

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/writhq/writ"

// graph is every package of the module with the packages it imports,
// transitively, listed by one go list (each go list loads the whole
// module, so the boundary tests share one).
var graph = sync.OnceValues(func() (*depGraph, error) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}} {{join .Deps \" \"}}", module+"/...").Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s/...: %w", module, err)
	}
	std, all := map[string]bool{}, map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			return nil, fmt.Errorf("go list printed %q", line)
		}
		std[f[0]] = f[1] == "true"
		all[f[0]] = f[2:]
	}
	return &depGraph{deps: all, std: std}, nil
})

// depGraph is what graph lists: each package's dependencies and which
// packages are the standard library's.
type depGraph struct {
	deps map[string][]string
	std  map[string]bool
}

// deps lists the packages the packages matching pattern (a package, or a
// tree ending in /...) import, transitively, outside the standard library,
// and those packages themselves, as go list -deps pattern does.
func deps(t *testing.T, pattern string) []string {
	t.Helper()
	return listDeps(t, pattern, false)
}

// listDeps is deps, with the standard library's packages too if std.
func listDeps(t *testing.T, pattern string, std bool) []string {
	t.Helper()
	g, err := graph()
	if err != nil {
		t.Fatal(err)
	}
	root, tree := strings.CutSuffix(pattern, "/...")
	seen := map[string]bool{}
	var list []string
	add := func(p string) {
		if !seen[p] && (std || !g.std[p]) {
			seen[p] = true
			list = append(list, p)
		}
	}
	for p, ds := range g.deps {
		if !strings.HasPrefix(p, module) || !(p == root || tree && strings.HasPrefix(p, root+"/")) {
			continue
		}
		add(p)
		for _, d := range ds {
			add(d)
		}
	}
	if len(list) == 0 {
		t.Fatalf("no package of the module matches %s", pattern)
	}
	return list
}

// TestDependencyBoundaries enforces the component boundaries of DESIGN.md: the
// node agent never links the control plane (nor Raft or Cedar), the control
// plane never links the agent, the protocol stays pure, and the sandbox stands
// alone.
func TestDependencyBoundaries(t *testing.T) {
	t.Parallel()
	for _, r := range []struct {
		pattern   string
		forbidden []string // import path prefixes
		allowed   []string // if set, every non-standard dependency must match one
	}{
		{pattern: module + "/nodeagent/...", forbidden: []string{
			module + "/controlplane", module + "/web", "github.com/hashicorp/raft", "github.com/cedar-policy/",
		}},
		{pattern: module + "/controlplane/...", forbidden: []string{module + "/nodeagent", module + "/sandbox"}},
		{pattern: module + "/web/...", forbidden: []string{module + "/controlplane", module + "/nodeagent", module + "/sandbox", module + "/ledger"}},
		{pattern: module + "/ledger/...", forbidden: []string{module + "/controlplane", module + "/nodeagent", module + "/sandbox", module + "/web"}},
		{pattern: module + "/client/...", forbidden: []string{module + "/controlplane", module + "/nodeagent", module + "/sandbox", module + "/web", module + "/ledger"}},
		{pattern: module + "/protocol", allowed: []string{
			module + "/protocol", "github.com/go-json-experiment/json", "golang.org/x/crypto",
		}},
		// The seccomp filter is built in pure Go (sandbox/internal/seccomp):
		// no libseccomp. The OCI runtime and image specs are the runc tier's.
		// internal/jsonx holds only the options of the one JSON library (it
		// imports only that library).
		{pattern: module + "/sandbox/...", allowed: []string{
			module + "/sandbox", module + "/internal/jsonx", "github.com/tetratelabs/wazero", "github.com/opencontainers/",
			"golang.org/x/sys", "github.com/gowebpki/jcs", "github.com/go-json-experiment/json",
			"golang.org/x/net/dns/dnsmessage",
		}},
	} {
		t.Run(r.pattern, func(t *testing.T) {
			for _, d := range deps(t, r.pattern) {
				for _, f := range r.forbidden {
					if strings.HasPrefix(d, f) {
						t.Errorf("%s depends on %s, which it must never import", r.pattern, d)
					}
				}
				if r.allowed != nil && !hasPrefix(d, r.allowed) {
					t.Errorf("%s depends on %s, outside its allowed set %v", r.pattern, d, r.allowed)
				}
			}
		})
	}
}

// TestDependencyListSeesEdges keeps the boundary test honest: the listing it
// relies on must show edges that do exist.
func TestDependencyListSeesEdges(t *testing.T) {
	t.Parallel()
	got := deps(t, module+"/cmd/writ")
	for _, want := range []string{module + "/protocol", module + "/cmd/writ/internal/cli", "github.com/spf13/cobra"} {
		if !contains(got, want) {
			t.Errorf("go list -deps of cmd/writ does not show %s: %v", want, got)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// TestServerLinksNoHarness: the control plane's own code links no test
// machinery and none of the in-process cluster of tests and benches, which
// live in controlplane/localcluster and reach into a server only through
// controlplane/internal/harness (docs/development.md).
func TestServerLinksNoHarness(t *testing.T) {
	t.Parallel()
	list := func(pattern string) []string { return listDeps(t, pattern, true) }
	server := list(module + "/controlplane")
	for _, f := range []string{"net/http/httptest", module + "/internal/freeport", module + "/controlplane/localcluster"} {
		if contains(server, f) {
			t.Errorf("controlplane links %s, which is for tests and in-process clusters only", f)
		}
	}
	// The listing sees these edges where they exist.
	harness := list(module + "/controlplane/localcluster")
	for _, want := range []string{module + "/internal/freeport", module + "/controlplane/internal/harness", module + "/controlplane"} {
		if !contains(harness, want) {
			t.Errorf("go list -deps of controlplane/localcluster does not show %s", want)
		}
	}
}
