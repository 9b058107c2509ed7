package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"sort"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/writhq/writ/sandbox"
)

// envPairs is the whole environment of a module: the allowlisted names that
// have a value, sorted.
func envPairs(m sandbox.Manifest, env map[string]string) [][2]string {
	var out [][2]string
	for _, name := range m.Env {
		if v, ok := env[name]; ok {
			out = append(out, [2]string{name, v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// sleep waits d or until ctx is done, whichever comes first.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// moduleConfig is what every instance of a tool's module is given, a run
// or the making of its initialized image alike, so that a guest starts the
// same way in both: its name as its one argument, env, the real clocks,
// sleeps woken when ctx ends, random bytes, the file system fs mounted at
// "/", and no start function run while instantiating (a run calls _start
// after the gate).
func moduleConfig(ctx context.Context, name string, env [][2]string, fs wazero.FSConfig,
	stdin io.Reader, stdout, stderr io.Writer) wazero.ModuleConfig {
	mc := wazero.NewModuleConfig().
		WithName(""). // anonymous: many instances at once
		WithArgs(name).
		WithStdin(stdin).
		WithStdout(stdout).
		WithStderr(stderr).
		WithFSConfig(fs).
		WithSysWalltime().WithSysNanotime().
		// A sleeping guest is in a host call, where closing on context done
		// cannot reach it: wake it at the deadline so that it is closed.
		WithNanosleep(func(ns int64) { sleep(ctx, time.Duration(ns)) }).
		WithRandSource(rand.Reader).
		WithStartFunctions()
	for _, kv := range env {
		mc = mc.WithEnv(kv[0], kv[1])
	}
	return mc
}
