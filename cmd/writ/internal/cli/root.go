// Package cli implements the writ command line: one cobra command tree, with
// every command reading and writing through the streams it is given so that
// tests run it in-process and as a built binary alike.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
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
	err := root.Execute()
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
		Use:           "writ",
		Short:         "Writ: the execution boundary between AI agents and the machines they act on",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if e.output != "json" && e.output != "text" {
				return fmt.Errorf("--output must be json or text, not %q", e.output)
			}
			return nil
		},
	}
	root.PersistentFlags().StringVarP(&e.output, "output", "o", "json", "output format: json or text")
	root.AddCommand(newMCP(e)) // the other commands are added below
	root.PersistentFlags().StringVar(&e.caFile, "ca", os.Getenv("WRIT_CA"), "the cluster CA file, to reach an https server (default: $WRIT_CA)")
	root.PersistentFlags().StringVar(&e.logLevel, "log-level", "", "debug, info, warn or error: what writ server, writ agent and writ dev log (default info)")
	root.AddCommand(newVersion(e), newKeygen(e), newIntent(e), newApproval(e), newDev(e), newSandbox(e), newBench(e), newVerify(e), newTool(e), newPolicy(e), newTenant(e), newKey(e), newReceipt(e), newLedger(e), newServer(e), newCA(e), newAgent(e), newToken(e), newSession(e), newNodes(e), newOperator(e))
	return root
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
