package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// maxSecretFile bounds a file read as a secret (a token, one line).
const maxSecretFile = 64 << 10

// secretFlag is a secret the CLI takes: from --NAME-file FILE, from the
// environment variable env, or from --NAME VALUE. A command line is shown
// to every user of the host (ps, /proc/PID/cmdline), so the last still
// works but warns on stderr. docs/cli.md lists every one.
type secretFlag struct {
	name, env, what string
	value, file     string
}

// register adds --NAME and --NAME-file to fs.
func (s *secretFlag) register(fs *pflag.FlagSet) {
	fs.StringVar(&s.value, s.name, "", s.what+" (visible in process listings: prefer --"+s.name+"-file or $"+s.env+")")
	fs.StringVar(&s.file, s.name+"-file", "", "file holding the "+s.what)
}

// get returns the secret, "" when none was given: from --NAME-file, --NAME,
// the file named by $ENV_FILE, or $ENV, in that order; giving both --NAME and
// --NAME-file is an error.
func (s *secretFlag) get(e *env) (string, error) {
	switch {
	case s.value != "" && s.file != "":
		return "", fmt.Errorf("give --%s or --%s-file, not both", s.name, s.name)
	case s.file != "":
		b, err := readSmallFile(s.file, maxSecretFile)
		if err != nil {
			return "", fmt.Errorf("--%s-file: %w", s.name, err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("--%s-file %s is empty", s.name, s.file)
		}
		return v, nil
	case s.value != "":
		fmt.Fprintf(e.err, "writ: warning: --%s puts the %s on the command line, where any user of this host can read it; use --%s-file FILE or $%s\n",
			s.name, s.what, s.name, s.env)
		return s.value, nil
	}
	if f := os.Getenv(s.env + "_FILE"); f != "" {
		b, err := readSmallFile(f, maxSecretFile)
		if err != nil {
			return "", fmt.Errorf("$%s_FILE: %w", s.env, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return strings.TrimSpace(os.Getenv(s.env)), nil
}

// require is get for a secret the command cannot do without.
func (s *secretFlag) require(e *env) (string, error) {
	v, err := s.get(e)
	if err == nil && v == "" {
		err = errors.New("the " + s.what + " is required: --" + s.name + "-file FILE, $" + s.env + ", or --" + s.name)
	}
	return v, err
}

// The secrets the CLI takes.
func adminTokenFlag() secretFlag {
	return secretFlag{name: "token", env: "WRIT_TOKEN", what: "admin token"}
}

// readTokenFlag is the token of a read that an auditor may also make.
func readTokenFlag() secretFlag {
	return secretFlag{name: "token", env: "WRIT_TOKEN", what: "auditor or admin token"}
}

func joinTokenFlag() secretFlag {
	return secretFlag{name: "token", env: "WRIT_JOIN_TOKEN", what: "join token"}
}
