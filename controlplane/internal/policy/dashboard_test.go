package policy

import "testing"

func TestDashboardPolicy(t *testing.T) {
	t.Parallel()
	set, err := Parse([]byte(DashboardPolicy))
	if err != nil {
		t.Fatal(err)
	}
	admin := DashboardUser{Role: "admin", Name: "root"}
	viewer := DashboardUser{Role: "viewer", Name: "v1"}
	acmeViewer := DashboardUser{Role: "viewer", Name: "v2", Tenant: "acme"}
	alice := DashboardUser{Role: "approver", Name: "alice", Tenant: "acme"}
	for _, c := range []struct {
		name                     string
		u                        DashboardUser
		action, page, tenant, ip string
		want                     bool
	}{
		{"admin views intents", admin, ActionView, PageIntents, "acme", "", true},
		{"admin manages the fleet", admin, ActionManage, PageFleet, "", "", true},
		{"admin cannot decide", admin, ActionDecide, PageApprovals, "acme", "bot", false},
		{"viewer views the fleet", viewer, ActionView, PageFleet, "", "", true},
		{"viewer views any tenant", viewer, ActionView, PageIntents, "globex", "", true},
		{"viewer cannot manage", viewer, ActionManage, PageFleet, "", "", false},
		{"viewer cannot decide", viewer, ActionDecide, PageApprovals, "acme", "bot", false},
		{"tenant viewer sees its tenant", acmeViewer, ActionView, PageIntents, "acme", "", true},
		{"tenant viewer does not see others", acmeViewer, ActionView, PageIntents, "globex", "", false},
		{"approver decides for its tenant", alice, ActionDecide, PageApprovals, "acme", "bot", true},
		{"approver never on its own intent", alice, ActionDecide, PageApprovals, "acme", "alice", false},
		{"approver not for another tenant", alice, ActionDecide, PageApprovals, "globex", "bot", false},
		{"approver cannot manage", alice, ActionManage, PageFleet, "", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := NewDashboardRequest(c.u, c.action, c.page, c.tenant, c.ip)
			if err != nil {
				t.Fatal(err)
			}
			if got := set.Dashboard(req).Allow; got != c.want {
				t.Fatalf("got allow=%v, want %v", got, c.want)
			}
		})
	}
	if _, err := NewDashboardRequest(DashboardUser{Role: "root"}, ActionView, PageFleet, "", ""); err == nil {
		t.Fatal("an unknown role built a request")
	}
	if set.Dashboard(DashboardRequest{}).Allow {
		t.Fatal("the zero request was allowed")
	}
}
