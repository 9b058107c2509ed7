package controlplane

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/writhq/writ/controlplane/internal/policy"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/ledger"
	"github.com/writhq/writ/protocol"
)

// ClusterCredentials creates the credentials file of a local cluster (make
// cluster) at path: the same keys as dev.json, with addrs naming every
// server and caFile the cluster CA. It also writes, beside it, ledger.key
// (the checkpoint key's seed, which every server of the cluster shares) and
// returns the log's origin and the admin token's hash for the servers'
// configuration. It never replaces a file.
func ClusterCredentials(path string, addrs []string, caFile string) (c *DevCredentials, origin, tokenHash string, err error) {
	c, err = newDevCredentials(addrs[0])
	if err != nil {
		return nil, "", "", err
	}
	c.Addrs, c.CAFile = addrs, caFile
	c.LedgerKey = strings.Replace(c.LedgerKey, "writ-dev", "writ-cluster", 1)
	origin, _, _ = strings.Cut(c.LedgerKey, "+")
	seed, _ := base64.StdEncoding.DecodeString(c.LedgerSeed)
	_, vkey, err := ledger.NewSigner(origin, seed)
	if err != nil {
		return nil, "", "", err
	}
	c.LedgerKey = vkey
	if err := writeNew(filepath.Join(filepath.Dir(path), "ledger.key"), []byte(c.LedgerSeed+"\n"), 0o600); err != nil {
		return nil, "", "", err
	}
	if err := writeCredentials(path, c); err != nil {
		return nil, "", "", err
	}
	sum := sha256.Sum256([]byte(c.AdminToken))
	return c, origin, protocol.FormatHash(sum), nil
}

// AdminCall is one call of the admin API: method, path under /v1/admin/, body.
type AdminCall struct {
	Method, Path string
	Body         []byte
}

// DevAdminCalls are the admin calls that give a cluster what `writ dev`
// registers: tenant "dev", its orchestrator and approver keys, the tools echo
// and echo_approval (module toolsDir/echo.wasm) and the permissive dev policy.
func DevAdminCalls(c *DevCredentials, toolsDir string) []AdminCall {
	echo := filepath.Join(toolsDir, "echo.wasm")
	t := c.Tenant
	return []AdminCall{
		{http.MethodPut, "tenants/" + t, mustMarshal(map[string]int64{"run_budget": 0})},
		{http.MethodPut, "tenants/" + t + "/keys/" + c.Orchestrator.KeyID, mustMarshal(map[string]string{"secret": c.Orchestrator.Secret})},
		{http.MethodPut, "tenants/" + t + "/approvers/" + c.Approver.KeyID, mustMarshal(map[string]string{"public": c.Approver.Public, "approver": c.Approver.Approver})},
		{http.MethodPut, "tools", devTool("echo", echo, false)},
		{http.MethodPut, "tools", devTool("echo_approval", echo, true)},
		{http.MethodPut, "policy", []byte(policy.DevPolicy)},
	}
}

// LoadDevCredentials reads a credentials file written by writ dev or
// ClusterCredentials.
func LoadDevCredentials(path string) (*DevCredentials, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c DevCredentials
	if err := jsonx.UnmarshalLenient(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &c, nil
}
