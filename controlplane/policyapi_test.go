package controlplane_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/protocol"
)

const denyAll = `// nothing is permitted
`

const onlyEcho = `@id("echo.only")
permit (principal, action == Writ::Action::"invoke", resource == Writ::Tool::"echo")
when { principal.tenant == "dev" };
`

// The admin reads the installed policy, lists its versions, rolls back to
// one, and replays recent decisions against a candidate before applying it.
func TestPolicyLifecycle(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	dev, err := d.admin.Policy(ctx)
	if err != nil || dev.Version == 0 || !strings.Contains(dev.Text, `@id("dev.invoke")`) || dev.InstalledAt.IsZero() {
		t.Fatalf("the dev policy: %+v %v", dev, err)
	}
	// An allowed intent, then a dry run of a policy that permits nothing:
	// its decision would change from allow to deny.
	r, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"x"}`), nil, 0)
	if err != nil || r.Policy == nil || r.Policy.Decision != "allow" {
		t.Fatalf("submit: %+v %v", r, err)
	}
	dry, err := d.admin.PolicyDryRun(ctx, denyAll, time.Now().Add(-time.Hour))
	if err != nil || dry.Examined < 1 || dry.Changed != dry.Examined || len(dry.Changes) != dry.Changed {
		t.Fatalf("dry run of deny-all: %+v %v", dry, err)
	}
	var found *protocol.PolicyChange
	for i, c := range dry.Changes {
		if c.IntentID == r.IntentID {
			found = &dry.Changes[i]
		}
	}
	if found == nil || found.Before != "allow" || found.After != "deny" || found.Tool != "echo" || found.Tenant != d.creds.Tenant {
		t.Fatalf("the intent's change: %+v in %+v", found, dry.Changes)
	}
	// The installed policy replayed changes nothing; a later since replays
	// nothing; a candidate that does not parse is refused.
	if same, err := d.admin.PolicyDryRun(ctx, dev.Text, time.Now().Add(-time.Hour)); err != nil || same.Changed != 0 || same.Examined != dry.Examined {
		t.Fatalf("dry run of the installed policy: %+v %v", same, err)
	}
	if none, err := d.admin.PolicyDryRun(ctx, denyAll, time.Now().Add(time.Hour)); err != nil || none.Examined != 0 {
		t.Fatalf("dry run from the future: %+v %v", none, err)
	}
	if _, err := d.admin.PolicyDryRun(ctx, "permit (", time.Time{}); apiCode(err) != "malformed" {
		t.Fatalf("dry run of a broken text: %v", err)
	}
	// Two installs, then a rollback to the dev policy: a new version with
	// its text, naming the version it rolls back to.
	for _, text := range []string{onlyEcho, denyAll} {
		if err := d.admin.Admin(ctx, "PUT", "policy", []byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	vs, err := d.admin.PolicyVersions(ctx)
	if err != nil || len(vs) != 3 || !vs[0].Current || vs[0].Bytes != len(denyAll) || vs[2].Version != dev.Version || vs[1].Version <= vs[2].Version {
		t.Fatalf("versions: %+v %v", vs, err)
	}
	if err := d.admin.PolicyRollback(ctx, dev.Version); err != nil {
		t.Fatal(err)
	}
	now, err := d.admin.Policy(ctx)
	if err != nil || now.Text != dev.Text || now.Hash != dev.Hash || now.RollbackOf != dev.Version || now.Version <= vs[0].Version {
		t.Fatalf("after rollback: %+v %v", now, err)
	}
	if err := d.admin.PolicyRollback(ctx, 1); apiCode(err) != "not_found" {
		t.Fatalf("rollback to a version never kept: %v", err)
	}
	r, err = d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"y"}`), nil, 0)
	if err != nil || r.Policy == nil || r.Policy.Decision != "allow" || r.Policy.Hash != dev.Hash {
		t.Fatalf("after the rollback the dev policy decides: %+v %v", r, err)
	}
}

func TestPolicyCheckOffline(t *testing.T) {
	t.Parallel()
	hash, ids, err := controlplane.ValidatePolicy([]byte(onlyEcho))
	if err != nil || !strings.HasPrefix(hash, "sha256:") || len(ids) != 1 || ids[0] != "echo.only" {
		t.Fatalf("validate: %q %q %v", hash, ids, err)
	}
	if _, _, err := controlplane.ValidatePolicy([]byte(`permit (principal, action, resource) when { resource.colour == "red" };`)); err == nil {
		t.Fatal("a policy without @id and with an unknown attribute validated")
	}
	cases, err := controlplane.ParsePolicyCases([]byte(`{
	  "tools": {"echo": {"sandbox": "wasm"}, "pay": {"requires_approval": true}},
	  "cases": [
	    {"name": "echo allowed", "tenant": "dev", "principal": "bot", "tool": "echo", "params": {"msg": "hi"}, "expect": "allow"},
	    {"name": "pay denied", "tenant": "dev", "principal": "bot", "tool": "pay", "expect": "deny"},
	    {"name": "other tenant", "tenant": "acme", "principal": "bot", "tool": "echo", "expect": "allow"}
	  ]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := controlplane.TestPolicy([]byte(onlyEcho), cases)
	if err != nil || len(res) != 3 {
		t.Fatalf("%+v %v", res, err)
	}
	if !res[0].Pass || res[0].Got != "allow" || len(res[0].Policies) != 1 || !res[1].Pass || res[2].Pass || res[2].Got != "deny" {
		t.Fatalf("results: %+v", res)
	}
	// A tool that requires approval, allowed: "approval"; with
	// @approvals("3"): "approval:3".
	allowAll := `@id("all") permit (principal, action, resource);`
	if res, err := controlplane.TestPolicy([]byte(allowAll), cases); err != nil || res[1].Got != "approval" {
		t.Fatalf("approval: %+v %v", res, err)
	}
	three := `@id("three") @approvals("3") permit (principal, action, resource);`
	if res, err := controlplane.TestPolicy([]byte(three), cases); err != nil || res[0].Got != "approval:3" || res[1].Got != "approval:3" {
		t.Fatalf("three approvers: %+v %v", res, err)
	}
	if _, err := controlplane.ParsePolicyCases([]byte(`{"tools":{"e":{}},"cases":[{"name":"a","tenant":"t","principal":"p","tool":"e","expect":"approval:2"}]}`)); err != nil {
		t.Fatalf("approval:2 refused: %v", err)
	}
	for name, bad := range map[string]string{
		"unknown member": `{"tools":{"echo":{}},"cases":[{"name":"a","tenant":"t","principal":"p","tool":"echo","expect":"allow","x":1}]}`,
		"unknown tool":   `{"tools":{},"cases":[{"name":"a","tenant":"t","principal":"p","tool":"echo","expect":"allow"}]}`,
		"bad expect":     `{"tools":{"echo":{}},"cases":[{"name":"a","tenant":"t","principal":"p","tool":"echo","expect":"maybe"}]}`,
		"approval:1":     `{"tools":{"echo":{}},"cases":[{"name":"a","tenant":"t","principal":"p","tool":"echo","expect":"approval:1"}]}`,
		"approval:02":    `{"tools":{"echo":{}},"cases":[{"name":"a","tenant":"t","principal":"p","tool":"echo","expect":"approval:02"}]}`,
		"no principal":   `{"tools":{"echo":{}},"cases":[{"name":"a","tenant":"t","tool":"echo","expect":"allow"}]}`,
		"no cases":       `{"tools":{"echo":{}},"cases":[]}`,
		"not json":       `[`,
	} {
		if _, err := controlplane.ParsePolicyCases([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
