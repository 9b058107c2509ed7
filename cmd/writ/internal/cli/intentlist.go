package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/client"
)

func newIntentList(e *env) *cobra.Command {
	var server, key, tenant, since string
	var f client.IntentFilter
	var all bool
	tokenFlag := readTokenFlag()
	cmd := &cobra.Command{
		Use:   "list (--tenant T --key ID=SECRET_FILE | --token-file FILE) [--run R] [--principal P] [--tool T] [--state S] [--since 24h|RFC3339] [--limit N] [--cursor C] [--all]",
		Short: "List intent summaries, newest first (a read signed with an orchestrator key, or with an auditor's or the admin's token)",
		Long: `List GET /v1/intents: intent summaries (id, tenant, principal, run, tool,
state, error code, admission and update times, receipt index), newest first,
never params or output. A read signed with a tenant's key, and an auditor
token of one tenant, list that tenant's intents; the admin token and an
auditor of all tenants list every tenant's, or --tenant's. One page of
--limit intents (default 50, at most 500) is printed with the cursor of the
next; --cursor goes on from it, --all follows every page to the end.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return err
				}
				f.Since = t
			}
			token, err := tokenFlag.get(e)
			if err != nil {
				return err
			}
			c, err := e.readClient(server, token, tenant, key)
			if err != nil {
				return err
			}
			f.Tenant = tenant
			var pages []*client.IntentPage
			for {
				p, err := c.Intents(context.Background(), f)
				if err != nil {
					return e.refused(err)
				}
				pages = append(pages, p)
				if !all || p.Next == "" {
					break
				}
				f.Cursor = p.Next
			}
			return e.printIntentPages(pages)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&server, "server", defaultServer(), "the control plane's API address")
	fl.StringVar(&tenant, "tenant", "", "the tenant: whose key signs the read, or (with a token) whose intents to list")
	fl.StringVar(&key, "key", "", "ID=SECRET_FILE: an orchestrator key of the tenant, to sign the read")
	tokenFlag.register(fl)
	fl.StringVar(&f.Run, "run", "", "only this run's intents")
	fl.StringVar(&f.Principal, "principal", "", "only this principal's intents")
	fl.StringVar(&f.Tool, "tool", "", "only this tool's intents")
	fl.StringVar(&f.State, "state", "", "only intents in this state (pending_approval, queued, dispatched, completed, failed, denied, rejected, expired, unknown)")
	fl.StringVar(&since, "since", "", "only intents admitted since: a duration back from now (24h) or an RFC 3339 time")
	fl.IntVar(&f.Limit, "limit", 0, "intents per page (default 50, at most 500)")
	fl.StringVar(&f.Cursor, "cursor", "", "go on from this cursor (the next page's, as printed)")
	fl.BoolVar(&all, "all", false, "follow every page to the end")
	return cmd
}

// parseSince reads --since: a positive duration back from now, or an RFC
// 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("--since %q: want a positive duration", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--since %q: want a duration (24h) or an RFC 3339 time", s)
	}
	return t, nil
}

// printIntentPages prints the pages: with -o json one line per page, with
// -o text one table and, when more follow, the next page's cursor.
func (e *env) printIntentPages(pages []*client.IntentPage) error {
	if e.output != "text" {
		for _, p := range pages {
			if err := e.printJSON(p); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTENANT\tPRINCIPAL\tRUN\tTOOL\tSTATE\tERROR\tADMITTED\tUPDATED\tRECEIPT")
	for _, p := range pages {
		for _, in := range p.Intents {
			receipt := "-"
			if in.ReceiptIndex != nil {
				receipt = fmt.Sprint(*in.ReceiptIndex)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(in.ID), cell(in.Tenant), cell(in.Principal),
				cell(in.RunID), cell(in.Tool), cell(in.State), cell(string(in.ErrorCode)),
				in.AdmittedAt.UTC().Format(time.RFC3339), in.UpdatedAt.UTC().Format(time.RFC3339), receipt)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next := pages[len(pages)-1].Next; next != "" {
		fmt.Fprintf(e.out, "next: --cursor %s\n", next)
	}
	return nil
}

// cell is a table cell: "-" for nothing, and no character that would break
// the table (a tab, a line break) or move the terminal.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
