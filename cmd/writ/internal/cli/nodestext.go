package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/writhq/writ/protocol"
)

// printNodeTable prints nodes as one table, a row each.
func printNodeTable(w io.Writer, nodes []protocol.NodeView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tSTATUS\tSERVER\tRUNS\tTIERS\tTOOLS\tOS/ARCH\tLAST HEARTBEAT")
	for _, n := range nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%d\t%s/%s\t%s\n", cell(n.Name), cell(n.ID), cell(n.Status), cell(n.Server),
			n.InFlight, n.Concurrency, cell(strings.Join(n.Tiers, ",")), len(n.Tools), cell(n.OS), cell(n.Arch), cell(n.LastHeartbeat))
	}
	return tw.Flush()
}

// printNode prints one node as labelled lines, its tools and labels sorted.
func printNode(w io.Writer, n *protocol.NodeView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, cell(v)) }
	line("name", n.Name)
	line("id", n.ID)
	line("status", n.Status)
	line("server", n.Server)
	line("runs", fmt.Sprintf("%d of %d", n.InFlight, n.Concurrency))
	line("tiers", strings.Join(n.Tiers, ", "))
	line("os/arch", n.OS+"/"+n.Arch)
	line("version", n.Version)
	line("enrolled", n.EnrolledAt)
	line("updated", n.UpdatedAt)
	line("last heartbeat", n.LastHeartbeat)
	line("labels", pairs(n.Labels))
	line("token labels", pairs(n.TokenLabels))
	for _, name := range slices.Sorted(maps.Keys(n.Tools)) {
		line("tool "+cell(name), n.Tools[name])
	}
	return tw.Flush()
}

// pairs is k=v,… sorted by key.
func pairs(m map[string]string) string {
	var b []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = append(b, k+"="+m[k])
	}
	return strings.Join(b, ",")
}
