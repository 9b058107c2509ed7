package sandbox

import (
	"context"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// Driver runs tool invocations in one isolation tier.
//
// Implementations MUST be safe for concurrent use: an agent runs several
// invocations at once on the same Driver.
type Driver interface {
	// Name is the tier's stable name ("wasm", "gvisor", "bwrap", "runc", "process").
	Name() string

	// Available reports whether this tier can run tools on this host. A nil
	// error means yes; otherwise the error (wrapping ErrUnavailable) says why
	// not, in words an operator can act on. It MAY be called often and
	// SHOULD be cheap after the first call.
	Available() error

	// Run runs one invocation to completion and reports it.
	//
	// When the tool could not be started (tier unavailable, manifest for
	// another tier, interpreter denied, option-like parameter, parameters
	// that do not fit the template...) Run returns an Outcome with
	// StatusRefused and a *RefusedError; it MUST NOT try another tier.
	// Otherwise the error is nil and the Outcome says how the tool ended.
	// Cancelling ctx stops the tool and everything it started; Run returns
	// only once they are gone.
	Run(ctx context.Context, inv Invocation) (Outcome, error)
}

// Gated is a Driver that can prepare a run while its caller is still
// deciding whether the tool may start: the agent's journal commit of the
// run then overlaps the tier's own preparation.
type Gated interface {
	Driver
	// RunGated is Run, except that it calls gate once, after everything it
	// can do before the tool's first instruction could execute and before
	// that instruction. A gate that returns an error means the tool must
	// not run: RunGated returns a refusal wrapping that error, and nothing
	// of the tool has run. A driver that cannot prepare without running
	// calls gate first.
	RunGated(ctx context.Context, inv Invocation, gate func() error) (Outcome, error)
}

// Conversing is a Driver that can connect its tool's standard input and
// output to the caller while the tool runs, instead of writing the
// parameters to its stdin: the mcp tier talks to a stdio MCP server so.
type Conversing interface {
	Driver
	// RunTalk is Run, except that the tool's stdin does not receive
	// Params: once the tool has started, talk is called in a goroutine of
	// its own with the tool's stdin and stdout. What the tool writes on
	// stdout still counts towards the output limit and is what the
	// Outcome's output and hash describe. When talk returns, the tool's
	// stdin is closed, and a tool still running after the tier's grace
	// period is killed. A tool that could not start never sees talk called.
	RunTalk(ctx context.Context, inv Invocation, talk Talk) (Outcome, error)
}

// Talk holds a conversation with a running tool: it writes to the tool's
// standard input and reads its standard output, and may close either
// (closing stdout only stops the reading: what the tool writes is still
// captured). It MUST return once stdout reaches end of file (the tool is
// gone) or ctx is done (the run's limits or its caller ended it).
type Talk func(ctx context.Context, stdin io.WriteCloser, stdout io.ReadCloser)

// Invocation is one request to run a tool.
type Invocation struct {
	// Manifest describes the tool and its limits. It MUST have been
	// validated (ParseManifest does it; Run validates again).
	Manifest Manifest

	// Params is the JSON object of parameters. It reaches the tool on stdin
	// exactly as given, and fills the manifest's argv template. Empty means
	// "{}".
	Params jsontext.Value

	// Workspace is an existing directory, absolute path, owned by the caller.
	// It is the tool's working directory and the only place it may write;
	// what the tool leaves there is kept, everything else is discarded by
	// the tiers that isolate the filesystem.
	Workspace string

	// Scratch says that Workspace is empty and that the caller removes it
	// after the run without reading it (the node agent's fresh workspace of
	// a dispatch). A tier that bounds the workspace with a tmpfs mounted
	// over it (wasm) then copies nothing into it or back: what the tool
	// wrote is discarded with the tmpfs. The other tiers ignore it.
	Scratch bool

	// Env gives values for the names in the manifest's env allowlist. A name
	// not in the allowlist is never passed, and nothing else is inherited
	// from the agent's environment.
	Env map[string]string
}
