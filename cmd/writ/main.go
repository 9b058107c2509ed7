// Command writ is the single Writ binary: the control plane, the node agent, and
// the client commands that sign, verify and inspect Writ's protocol objects.
package main

import (
	"os"

	"github.com/writhq/writ/cmd/writ/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
