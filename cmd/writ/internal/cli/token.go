package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/protocol"
)

// dashboardTokenFlags are the flags writ token create takes for the
// dashboard's roles (viewer, approver, admin) and the auditor's; --role node
// and --labels are the join tokens' (fleet.go).
type dashboardTokenFlags struct {
	tenant, approver string
	outputs          bool
}

func (f *dashboardTokenFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.tenant, "tenant", "", "the tenant a viewer or an auditor is limited to, or an approver bound to")
	cmd.Flags().BoolVar(&f.outputs, "outputs", false, "auditor tokens: may read tools' outputs too")
	cmd.Flags().StringVar(&f.approver, "approver", "", "approver tokens: the approver identity its key is registered with")
}

// body returns the request of POST /v1/admin/tokens; ttl 0 is the server's
// default (30 days).
func (f dashboardTokenFlags) body(role string, ttl time.Duration) ([]byte, error) {
	switch {
	case role != "viewer" && role != "approver" && role != "admin" && role != "auditor":
		return nil, fmt.Errorf("--role must be viewer, approver, admin, auditor or node, not %q", role)
	case role == "approver" && (f.tenant == "" || f.approver == ""):
		return nil, errors.New("an approver token needs --tenant and --approver (the identity its key is registered with)")
	case role != "approver" && f.approver != "":
		return nil, errors.New("--approver is for --role approver")
	case role != "auditor" && f.outputs:
		return nil, errors.New("--outputs is for --role auditor")
	}
	return json.Marshal(protocol.TokenRequest{Role: role, Tenant: f.tenant, Approver: f.approver, Outputs: f.outputs,
		TTLSeconds: int64(ttl / time.Second)})
}

// createDashboardToken issues a dashboard sign-in token or an auditor's API
// token and prints it once.
func createDashboardToken(e *env, a *adminFlags, f dashboardTokenFlags, role string, ttl time.Duration) error {
	body, err := f.body(role, ttl)
	if err != nil {
		return err
	}
	c, err := a.client(e)
	if err != nil {
		return err
	}
	var out map[string]any
	if err := c.AdminJSON(context.Background(), "POST", "tokens", body, &out); err != nil {
		return e.apiFailure(err)
	}
	if e.output == "text" {
		fmt.Fprintln(e.out, out["token"])
		return nil
	}
	return e.printJSON(out)
}

func newTokenRevoke(e *env, a *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a dashboard token and end its sessions",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return a.call(e, "DELETE", "tokens/"+url.PathEscape(args[0]), nil)
		},
	}
}

func newTokenList(e *env, a *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the dashboard tokens and unused join tokens, with each token's open sessions (no secret is shown)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return a.list(e, "tokens")
		},
	}
}

// newSession is `writ session list|revoke`: the dashboard's open sessions.
func newSession(e *env) *cobra.Command {
	var a adminFlags
	cmd := &cobra.Command{Use: "session", Short: "List and end dashboard sessions (admin)"}
	a.register(cmd)
	list := &cobra.Command{
		Use:   "list",
		Short: "List the open dashboard sessions: id, user (token id), role, opened and expiry times",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return a.list(e, "sessions")
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "End a dashboard session (its browser is signed out at its next request)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return a.call(e, "DELETE", "sessions/"+url.PathEscape(args[0]), nil)
		},
	}
	cmd.AddCommand(list, revoke)
	return cmd
}

// list prints an admin list (GET /v1/admin/PATH) as the server answers it.
func (a *adminFlags) list(e *env, path string) error {
	c, err := a.client(e)
	if err != nil {
		return err
	}
	var out json.RawMessage
	if err := c.AdminJSON(context.Background(), "GET", path, nil, &out); err != nil {
		return e.apiFailure(err)
	}
	return e.printList(out)
}
