package cli

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/protocol"
)

// The policy's life cycle: get, history and rollback ask the server (admin);
// validate and test run here, offline, with the server's own checks and
// evaluation; dry-run asks the server to replay recent decisions.

func newPolicyGet(e *env, a *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "get",
		Short: "Print the installed policy set: its version, hash and text (-o text: the text alone)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			c, err := a.client(e)
			if err != nil {
				return err
			}
			p, err := c.Policy(context.Background())
			if err != nil {
				return e.apiFailure(err)
			}
			if e.output == "text" {
				_, err := fmt.Fprint(e.out, p.Text)
				return err
			}
			return e.printJSON(p)
		},
	}
}

func newPolicyHistory(e *env, a *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "history",
		Short: "List the kept policy versions, newest first (at most 64)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			c, err := a.client(e)
			if err != nil {
				return err
			}
			vs, err := c.PolicyVersions(context.Background())
			if err != nil {
				return e.apiFailure(err)
			}
			if e.output != "text" {
				return e.printJSON(protocol.PolicyVersions{Versions: vs})
			}
			tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "VERSION\tINSTALLED\tHASH\tBYTES\tNOTE")
			for _, v := range vs {
				note := ""
				if v.RollbackOf != 0 {
					note = fmt.Sprintf("rollback to %d", v.RollbackOf)
				}
				if v.Current {
					note = join(note, "current")
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", v.Version, v.InstalledAt.UTC().Format(time.RFC3339), v.Hash, v.Bytes, cell(note))
			}
			return tw.Flush()
		},
	}
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + ", " + b
}

func newPolicyRollback(e *env, a *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "rollback VERSION",
		Short: "Reinstall a kept version's text as a new version (writ policy history lists them)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			v, err := strconv.ParseUint(args[0], 10, 64)
			if err != nil || v == 0 {
				return fmt.Errorf("VERSION %q is not a policy version", args[0])
			}
			c, err := a.client(e)
			if err != nil {
				return err
			}
			if err := c.PolicyRollback(context.Background(), v); err != nil {
				return e.apiFailure(err)
			}
			if e.output == "text" {
				fmt.Fprintln(e.out, "ok")
				return nil
			}
			return e.printJSON(map[string]bool{"ok": true})
		},
	}
}

func newPolicyValidate(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a policy text offline as the server would before installing it; exit 1 if it fails",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			b, err := readSmallFile(args[0], 1<<20)
			if err != nil {
				return err
			}
			hash, ids, verr := controlplane.ValidatePolicy(b)
			if verr != nil {
				if e.output == "text" {
					fmt.Fprintf(e.out, "invalid: %v\n", verr)
				} else {
					e.printJSON(map[string]any{"valid": false, "error": verr.Error()})
				}
				return exitError{exitRefused}
			}
			if e.output == "text" {
				fmt.Fprintf(e.out, "valid: %d policies, %s\n", len(ids), hash)
				return nil
			}
			return e.printJSON(map[string]any{"valid": true, "hash": hash, "policies": ids})
		},
	}
}

func newPolicyTest(e *env) *cobra.Command {
	var casesFile string
	cmd := &cobra.Command{
		Use:   "test FILE --cases CASES.json",
		Short: "Decide each case with the policy text, offline; exit 1 if any decision differs from the expected one",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			text, err := readSmallFile(args[0], 1<<20)
			if err != nil {
				return err
			}
			cb, err := readSmallFile(casesFile, 4<<20)
			if err != nil {
				return err
			}
			cases, err := controlplane.ParsePolicyCases(cb)
			if err != nil {
				return err
			}
			results, err := controlplane.TestPolicy(text, cases)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			failed := 0
			for _, r := range results {
				if !r.Pass {
					failed++
				}
			}
			if e.output == "text" {
				tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "CASE\tEXPECT\tGOT\tPOLICIES\tRESULT")
				for _, r := range results {
					res := "pass"
					if !r.Pass {
						res = "FAIL"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(r.Name), r.Expect, r.Got, cell(joinAll(r.Policies)), res)
				}
				tw.Flush()
				fmt.Fprintf(e.out, "%d of %d cases pass\n", len(results)-failed, len(results))
			} else if err := e.printJSON(map[string]any{"cases": results, "passed": len(results) - failed, "failed": failed}); err != nil {
				return err
			}
			if failed > 0 {
				return exitError{exitRefused}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&casesFile, "cases", "", "the cases file (JSON: tools and cases, docs/policy.md)")
	cmd.MarkFlagRequired("cases")
	return cmd
}

func joinAll(s []string) string {
	out := ""
	for _, x := range s {
		out = join(out, x)
	}
	return out
}

func newPolicyDryRun(e *env, a *adminFlags) *cobra.Command {
	var since string
	cmd := &cobra.Command{
		Use:   "dry-run FILE [--since 24h]",
		Short: "Replay the authorization of recent intents against a candidate policy text and list the decisions it would change",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			text, err := readSmallFile(args[0], 1<<20)
			if err != nil {
				return err
			}
			from, err := parseSince(since, time.Now())
			if err != nil {
				return err
			}
			c, err := a.client(e)
			if err != nil {
				return err
			}
			r, err := c.PolicyDryRun(context.Background(), string(text), from)
			if err != nil {
				return e.apiFailure(err)
			}
			if e.output != "text" {
				return e.printJSON(r)
			}
			fmt.Fprintf(e.out, "%d intents replayed since %s, %d skipped, %d decisions would change\n",
				r.Examined, r.Since.UTC().Format(time.RFC3339), r.Skipped, r.Changed)
			if len(r.Changes) > 0 {
				tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "INTENT\tTENANT\tPRINCIPAL\tTOOL\tADMITTED\tBEFORE\tAFTER\tPOLICIES")
				for _, ch := range r.Changes {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(ch.IntentID), cell(ch.Tenant), cell(ch.Principal), cell(ch.Tool),
						ch.AdmittedAt.UTC().Format(time.RFC3339), ch.Before, ch.After, cell(joinAll(ch.Policies)))
				}
				tw.Flush()
			}
			if r.Truncated {
				fmt.Fprintf(e.out, "(the first %d changes are listed)\n", len(r.Changes))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&since, "since", "24h", "replay intents admitted since: a duration back from now (24h) or an RFC 3339 time")
	return cmd
}
