package cli

import (
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
)

// newToolHash is `writ tool hash`: the manifest hash a node owner compares
// with what the control plane registered.
func newToolHash(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "hash FILE...",
		Short: "Print the manifest hash of tool manifests (or of the manifest in a tool registration)",
		Long: `Print the hash that identifies a tool's manifest to the control plane and to node
agents: sha256 of the RFC 8785 canonical form of the manifest exactly as written
(defaults are not filled in). FILE is a manifest, as a node's allowlist holds, or a
tool registration (writ tool apply -f), whose "manifest" member is hashed. A
dispatch runs on a node only when the hashes are equal. The manifest must parse.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, files []string) error {
			for _, f := range files {
				raw, err := readSmallFile(f, 1<<20)
				if err != nil {
					return err
				}
				var reg struct {
					Manifest jsontext.Value `json:"manifest"`
				}
				if json.Unmarshal(raw, &reg) == nil && reg.Manifest.Kind() == '{' {
					raw = reg.Manifest
				}
				m, err := sandbox.ParseManifest(raw)
				if err != nil {
					return fmt.Errorf("%s: %w", f, err)
				}
				h, err := protocol.ManifestHash(raw)
				if err != nil {
					return fmt.Errorf("%s: %w", f, err)
				}
				if e.output == "text" {
					fmt.Fprintf(e.out, "%s  %s\n", h, m.Name)
					continue
				}
				if err := e.printJSON(map[string]string{"file": f, "name": m.Name, "tier": m.Tier, "hash": h}); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
