package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/client"
	"github.com/writhq/writ/protocol"
)

// adminFlags are the flags every admin command takes.
type adminFlags struct {
	server string
	token  secretFlag
}

func (a *adminFlags) register(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&a.server, "server", defaultServer(), "the control plane's API address")
	a.token = adminTokenFlag()
	a.token.register(cmd.PersistentFlags())
}

// client returns a client of the server --server names, with the admin
// token (--token-file, --token, WRIT_TOKEN_FILE or WRIT_TOKEN: see
// secretFlag.get); without one it is an error.
func (a *adminFlags) client(e *env) (*client.Client, error) {
	token, err := a.token.require(e)
	if err != nil {
		return nil, err
	}
	return e.client(a.server, token)
}

// call sends one admin call and reports it.
func (a *adminFlags) call(e *env, method, path string, body []byte) error {
	c, err := a.client(e)
	if err != nil {
		return err
	}
	if err := c.Admin(context.Background(), method, path, body); err != nil {
		return e.apiFailure(err)
	}
	if e.output == "text" {
		fmt.Fprintln(e.out, "ok")
		return nil
	}
	return e.printJSON(map[string]bool{"ok": true})
}

func newTool(e *env) *cobra.Command {
	var a adminFlags
	var file string
	cmd := &cobra.Command{Use: "tool", Short: "Register tools (admin)"}
	a.register(cmd)
	apply := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Register or replace a tool from its registration (docs/controlplane.md)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			b, err := readSmallFile(file, 1<<20)
			if err != nil {
				return err
			}
			return a.call(e, "PUT", "tools", b)
		},
	}
	apply.Flags().StringVarP(&file, "file", "f", "", "the tool registration, JSON")
	apply.MarkFlagRequired("file")
	cmd.AddCommand(apply, newToolHash(e), newToolInit(e), newToolImportMCP(e, &a))
	return cmd
}

func newPolicy(e *env) *cobra.Command {
	var a adminFlags
	var file string
	cmd := &cobra.Command{Use: "policy", Short: "Install, read, version, validate, test and dry-run the Cedar policy set"}
	a.register(cmd)
	apply := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Install a Cedar policy set; refused unless it parses and every policy has an @id",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			b, err := readSmallFile(file, 1<<20)
			if err != nil {
				return err
			}
			return a.call(e, "PUT", "policy", b)
		},
	}
	apply.Flags().StringVarP(&file, "file", "f", "", "the policy text")
	apply.MarkFlagRequired("file")
	cmd.AddCommand(apply, newPolicyGet(e, &a), newPolicyHistory(e, &a), newPolicyRollback(e, &a),
		newPolicyValidate(e), newPolicyTest(e), newPolicyDryRun(e, &a))
	return cmd
}

func newTenant(e *env) *cobra.Command {
	var a adminFlags
	var budget int64
	cmd := &cobra.Command{Use: "tenant", Short: "Manage tenants (admin)"}
	a.register(cmd)
	put := &cobra.Command{
		Use:   "put TENANT [--run-budget N]",
		Short: "Create or update a tenant and the intents one run may have admitted (0: no limit)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			b, _ := json.Marshal(protocol.TenantRequest{RunBudget: budget})
			return a.call(e, "PUT", "tenants/"+url.PathEscape(args[0]), b)
		},
	}
	put.Flags().Int64Var(&budget, "run-budget", 0, "intents one run may have admitted; 0 is no limit")
	cmd.AddCommand(put)
	return cmd
}

func newKey(e *env) *cobra.Command {
	var a adminFlags
	var tenant, id, secretFile, public, approver string
	cmd := &cobra.Command{Use: "key", Short: "Register and remove orchestrator and approver keys (admin)"}
	a.register(cmd)
	cmd.PersistentFlags().StringVar(&tenant, "tenant", "", "the tenant the key belongs to")
	cmd.PersistentFlags().StringVar(&id, "id", "", "the key id")
	path := func(kind string) string {
		return "tenants/" + url.PathEscape(tenant) + "/" + kind + "/" + url.PathEscape(id)
	}
	need := func() error {
		if tenant == "" || id == "" {
			return errors.New("--tenant and --id are required")
		}
		return nil
	}
	add := &cobra.Command{
		Use:   "add --tenant T --id ID --secret-file FILE",
		Short: "Register an orchestrator HMAC key (the secret is sealed before it is stored)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := need(); err != nil {
				return err
			}
			secret, err := readKeyFile(secretFile)
			if err != nil {
				return err
			}
			b, _ := json.Marshal(protocol.IntentKeyRequest{Secret: base64.StdEncoding.EncodeToString(secret)})
			return a.call(e, "PUT", path("keys"), b)
		},
	}
	add.Flags().StringVar(&secretFile, "secret-file", "", "the key file written by writ keygen hmac")
	addApprover := &cobra.Command{
		Use:   "add-approver --tenant T --id ID --public B64 --approver NAME",
		Short: "Register an approver's Ed25519 public key, bound to the identity it signs as",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := need(); err != nil {
				return err
			}
			b, _ := json.Marshal(protocol.ApproverKeyRequest{Public: public, Approver: approver})
			return a.call(e, "PUT", path("approvers"), b)
		},
	}
	addApprover.Flags().StringVar(&public, "public", "", "the standard base64 of the 32-byte public key")
	addApprover.Flags().StringVar(&approver, "approver", "", "the approver identity")
	del := &cobra.Command{
		Use:   "delete --tenant T --id ID",
		Short: "Remove an orchestrator key",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := need(); err != nil {
				return err
			}
			return a.call(e, "DELETE", path("keys"), nil)
		},
	}
	delApprover := &cobra.Command{
		Use:   "delete-approver --tenant T --id ID",
		Short: "Remove an approver key",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := need(); err != nil {
				return err
			}
			return a.call(e, "DELETE", path("approvers"), nil)
		},
	}
	cmd.AddCommand(add, addApprover, del, delApprover)
	return cmd
}
