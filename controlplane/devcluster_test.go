package controlplane

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// TestDevAllowlistMatchesRegistration: the manifests an agent's allowlist
// gets (DevManifests: writ dev's agent, writ dev register --allowlist for
// make cluster) hash exactly as the tools DevAdminCalls registers, so that
// the control plane schedules the dev tools on those agents.
func TestDevAllowlistMatchesRegistration(t *testing.T) {
	t.Parallel()
	allow := DevManifests("/opt/writ/tools")
	seen := 0
	for _, call := range DevAdminCalls(&DevCredentials{Tenant: "dev"}, "/opt/writ/tools") {
		if call.Path != "tools" {
			continue
		}
		var reg struct {
			Name     string         `json:"name"`
			Manifest jsontext.Value `json:"manifest"`
		}
		if err := jsonx.UnmarshalLenient(call.Body, &reg); err != nil {
			t.Fatal(err)
		}
		want, err1 := protocol.ManifestHash(reg.Manifest)
		got, err2 := protocol.ManifestHash(allow[reg.Name])
		if err1 != nil || err2 != nil || got != want {
			t.Errorf("tool %s: registered with hash %s, the allowlist holds %s (%v %v)", reg.Name, want, got, err1, err2)
		}
		seen++
	}
	if seen != len(allow) || seen == 0 {
		t.Errorf("%d tools registered, %d in the allowlist", seen, len(allow))
	}
}
