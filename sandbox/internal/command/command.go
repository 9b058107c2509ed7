// Package command turns a command manifest and its parameters into what a
// tier executes: the open executable that was inspected, the argv, the
// environment and stdin. Every refusal common to the command tiers (bad
// parameters, option-like values, interpreters) happens here, once.
package command

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"sort"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/internal/interp"
)

// Prepared is a command ready to run.
type Prepared struct {
	Exe      *os.File // the inspected executable; the caller closes it
	RealPath string   // where Exe was found after resolving symlinks
	Argv     []string // argv[0] is the manifest's command path
	Stdin    []byte   // the params JSON object
	// Digest is "sha256:"+hex of Exe's content: what the tool's result
	// attests ran.
	Digest string
}

// Prepare checks m's parameters and executable. Errors wrap
// sandbox.ErrParams, sandbox.ErrDashArg or sandbox.ErrInterpreter, or say
// why the executable cannot be opened.
func Prepare(m sandbox.Manifest, params []byte, d *interp.Detector) (Prepared, error) {
	argv, err := sandbox.Argv(m, params)
	if err != nil {
		return Prepared{}, err
	}
	exe, real, err := interp.Open(m.Command.Path)
	if err != nil {
		return Prepared{}, fmt.Errorf("command: %w", err)
	}
	if !m.AllowInterpreter {
		if err := d.Check(exe, real, argv); err != nil {
			exe.Close()
			return Prepared{}, fmt.Errorf("%w: %v", sandbox.ErrInterpreter, err)
		}
	}
	stdin := params
	if len(bytes.TrimSpace(stdin)) == 0 {
		stdin = []byte("{}")
	}
	sum, err := d.Hash(exe) // cached by the file's identity: Check read it
	if err != nil {
		exe.Close()
		return Prepared{}, fmt.Errorf("command: %s: %w", real, err)
	}
	return Prepared{Exe: exe, RealPath: real, Argv: argv, Stdin: stdin, Digest: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

// Environ is the whole environment of a tool: the manifest's allowlisted
// names that have a value in env, sorted, and nothing else.
func Environ(m sandbox.Manifest, env map[string]string) []string {
	out := []string{}
	for _, name := range m.Env {
		if v, ok := env[name]; ok {
			out = append(out, name+"="+v)
		}
	}
	sort.Strings(out)
	return out
}
