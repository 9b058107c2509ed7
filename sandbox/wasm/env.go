package wasm

import (
	"bytes"
	"context"
	"io"
	"sort"
	"time"

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
