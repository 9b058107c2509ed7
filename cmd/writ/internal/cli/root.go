// Package cli implements the writ command line: one cobra command tree, with
// every command reading and writing through the streams it is given so that
// tests run it in-process and as a built binary alike.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/client"
)

// exitError carries an exit code without printing anything more: the command
// has already said what it had to say (a verify command's JSON line).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// env is what every command needs: its streams, the clock, the output format.
type env struct {
	in       io.Reader
	out, err io.Writer
	now      func() time.Time
	output   string
	caFile   string // --ca: the cluster CA, for https servers
	logLevel string // --log-level of server, agent and dev ("": each one's default)
}

// Main runs the writ command line with args and returns the process exit code.
func Main(args []string, in io.Reader, out, errw io.Writer) int {
	e := &env{in: in, out: out, err: errw, now: now, output: "json"}
	root := newRoot(e)
	root.SetArgs(args)
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errw)
	stopProfile := startEnvCPUProfile(errw)
	stopAllocs := startEnvAllocs()
	err := root.Execute()
	stopAllocs()
	stopProfile()
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	default:
		fmt.Fprintf(errw, "writ: %v\n", explain(err))
		return 2
	}
}

func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:               "writ",
		Short:             "Writ: the execution boundary between AI agents and the machines they act on",
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return e.checkOutput(cmd) },
	}
	root.PersistentFlags().StringVarP(&e.output, "output", "o", "json", "output format: json or text")
	root.AddCommand(newMCP(e)) // the other commands are added below
	root.PersistentFlags().StringVar(&e.caFile, "ca", os.Getenv("WRIT_CA"), "the cluster CA file, to reach an https server (default: $WRIT_CA)")
	root.PersistentFlags().StringVar(&e.logLevel, "log-level", "", "debug, info, warn or error: what writ server, writ agent and writ dev log (default info)")
	defer markTextCommands(root)
	root.AddCommand(newVersion(e), newKeygen(e), newIntent(e), newApproval(e), newDev(e), newSandbox(e), newBench(e), newVerify(e), newTool(e), newPolicy(e), newTenant(e), newKey(e), newReceipt(e), newLedger(e), newServer(e), newCA(e), newAgent(e), newToken(e), newSession(e), newNodes(e), newOperator(e), newRun(e), newLock(e))
	return root
}

// textCommands are the commands with a text form (-o text): a table, labelled
// lines, indented JSON, or what a long-running command logs. Every other
// command prints JSON only and refuses -o text.
var textCommands = []string{
	"agent", "approval sign", "approval submit", "approval verify",
	"bench admit", "bench e2e", "bench fleet", "bench fleet-server", "bench sandbox",
	"dev", "intent cancel", "intent get", "intent list", "intent output", "intent sign", "intent submit", "intent verify",
	"key add", "key add-approver", "key delete", "key delete-approver", "keygen", "ledger admin",
	"lock create", "lock delete", "lock list",
	"nodes drain", "nodes list", "nodes ready", "nodes revoke", "nodes show",
	"operator migrate-log", "policy apply", "policy dry-run", "policy get", "policy history", "policy rollback",
	"policy test", "policy validate", "receipt get", "run cancel", "server",
	"session list", "session revoke", "tenant put", "token create", "token list", "token revoke",
	"tool apply", "tool hash", "tool import-mcp", "tool init", "verify admin", "verify bundle", "verify receipt", "version",
}

// markTextCommands marks the textCommands under root; it panics on a name
// that is not a command, so that the list cannot go stale.
func markTextCommands(root *cobra.Command) {
	for _, path := range textCommands {
		c, rest, err := root.Find(strings.Fields(path))
		if err != nil || len(rest) != 0 || c.CommandPath() != "writ "+path {
			panic("cli: textCommands names " + path + ", which is not a command")
		}
		textOutput(c)
	}
}

// now is the clock of signing commands, to the millisecond: finer digits only
// make the objects longer.
func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// client returns an API client for server, trusting --ca when given.
func (e *env) client(server, token string) (*client.Client, error) {
	server, err := e.serverURLs(server)
	if err != nil {
		return nil, err
	}
	c := client.New(server, token)
	if e.caFile != "" {
		pem, err := readSmallFile(e.caFile, 1<<20)
		if err != nil {
			return nil, err
		}
		if err := c.TrustCA(pem); err != nil {
			return nil, err
		}
	}
	return c, nil
}
