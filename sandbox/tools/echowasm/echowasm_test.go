package echowasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// run instantiates the module in wazero with in as stdin and returns stdout
// and the exit code.
func run(t *testing.T, in []byte) ([]byte, uint32) {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	var out bytes.Buffer
	cfg := wazero.NewModuleConfig().WithStdin(bytes.NewReader(in)).WithStdout(&out)
	_, err := r.InstantiateWithConfig(ctx, Module(), cfg)
	if err == nil {
		return out.Bytes(), 0
	}
	if ee, ok := err.(*sys.ExitError); ok {
		return out.Bytes(), ee.ExitCode()
	}
	t.Fatalf("instantiate: %v", err)
	return nil, 0
}

func TestEcho(t *testing.T) {
	big := make([]byte, 3*bufLen+123) // several reads, the last one short
	rand.Read(big)
	for name, in := range map[string][]byte{
		"empty":  {},
		"params": []byte(`{"msg":"hello"}`),
		"big":    big,
	} {
		t.Run(name, func(t *testing.T) {
			out, code := run(t, in)
			if code != 0 {
				t.Fatalf("exit %d, want 0", code)
			}
			if !bytes.Equal(out, in) {
				t.Fatalf("output %d bytes, want the %d bytes of input back", len(out), len(in))
			}
		})
	}
}

// TestValidates compiles the module alone: a malformed encoding fails here
// with wazero's own message.
func TestValidates(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	if _, err := r.CompileModule(ctx, Module()); err != nil {
		t.Fatal(err)
	}
	if n := len(Module()); n > 512 {
		t.Errorf("module is %d bytes, want it small", n)
	}
}
