package nodeagent

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/nodeagent/internal/store"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/process"
	"github.com/writhq/writ/sandbox/sandboxtest"
	"github.com/writhq/writ/sandbox/wasm"
)

const (
	echoPackage    = "github.com/writhq/writ/sandbox/tools/echo"
	witnessPackage = "github.com/writhq/writ/nodeagent/internal/witness"
	nodeID         = "node-1"
)

var (
	serverKey = ed25519.NewKeyFromSeed([]byte("server-seed-0123456789abcdef0123"))
	otherKey  = ed25519.NewKeyFromSeed([]byte("other-seed-0123456789abcdef01234"))
	nodeKey   = ed25519.NewKeyFromSeed([]byte("node-seed-0123456789abcdef012345"))
)

// keys is a protocol.SignerKeys from a map.
type keys map[string]ed25519.PublicKey

func (k keys) SignerKey(id string) (ed25519.PublicKey, bool) { p, ok := k[id]; return p, ok }

var (
	servers = keys{"server-1": serverKey.Public().(ed25519.PublicKey)}
	nodes   = keys{nodeID: nodeKey.Public().(ed25519.PublicKey)}
)

// clock is a settable fake clock for the validity windows; tools still run
// in real time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// Shared across the package's tests: one wasm driver (compiling a module
// takes a while) and the built tools.
var (
	wasmOnce   sync.Once
	wasmDriver *wasm.Driver
	wasmErr    error
	cacheDir   string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "writ-nodeagent-test-")
	if err != nil {
		panic(err)
	}
	cacheDir = dir
	code := m.Run()
	if wasmDriver != nil {
		wasmDriver.Close(context.Background())
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func sharedWasm(t *testing.T) sandbox.Driver {
	wasmOnce.Do(func() {
		cfg := wasm.DefaultConfig()
		cfg.CacheDir = wasmCacheDir()
		wasmDriver, wasmErr = wasm.New(cfg)
	})
	if wasmErr != nil {
		t.Fatal(wasmErr)
	}
	sandboxtest.RequireAvailable(t, "wasm", wasmDriver.Available())
	return wasmDriver
}

// wasmCacheDir is a compilation cache kept across test runs (compiling the
// echo module takes seconds under the race detector): a directory of ours
// that only we can use, or a fresh one when that cannot be had.
func wasmCacheDir() string {
	d := filepath.Join(os.TempDir(), fmt.Sprintf("writ-nodeagent-wasm-%d", os.Getuid()))
	os.Mkdir(d, 0o700)
	st, err := os.Lstat(d)
	if sys, ok := st.Sys().(*syscall.Stat_t); err != nil || !st.IsDir() || !ok || int(sys.Uid) != os.Getuid() || st.Mode().Perm() != 0o700 {
		return filepath.Join(cacheDir, "wasm")
	}
	return d
}

// processDriver returns the process tier, letting tools write below rw (the
// witness's directory: a node owner's process_read_write grant).
func processDriver(t *testing.T, rw ...string) sandbox.Driver {
	cfg := process.DefaultConfig()
	cfg.UnshareNetwork = false // needs root; these tests need no isolation from the network
	cfg.ReadWrite = rw
	d, err := process.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, "process", d.Available())
	return d
}

// harness is one node: its store, allowlist (echo in wasm, witness in
// process, a runc tool it cannot run) and executor, with a fake clock.
type harness struct {
	t        *testing.T
	dir      string
	clock    *clock
	verifier *protocol.Verifier
	store    *store.Store
	allow    *Allowlist
	tiers    *Tiers
	x        *Executor
	witness  string // the file the witness tool appends to
	release  string // the file the witness waits for, when asked to
	seq      int
	notified []string
	notifyMu sync.Mutex
	// onResult, if set, is called by OnResult with each result sent.
	onResult func(store.Pending)
}

func newHarness(t *testing.T, concurrency int, wrap ...func(sandbox.Driver) sandbox.Driver) *harness {
	h := &harness{t: t, dir: t.TempDir(), clock: &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}}
	// The witness writes where a node owner's process_read_write grant
	// lets it: a directory its user (not root: a root agent runs process
	// tools as 65534) may reach and write.
	shared, err := os.MkdirTemp("", "writ-witness-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	os.Chmod(shared, 0o777)
	h.witness, h.release = filepath.Join(shared, "witness.log"), filepath.Join(shared, "release")
	tools := filepath.Join(h.dir, "tools")
	os.Mkdir(tools, 0o755)
	echo := sandboxtest.BuildTool(t, echoPackage, "wasip1", "wasm")
	witness := sandboxtest.BuildTool(t, witnessPackage, runtime.GOOS, runtime.GOARCH)
	writeFiles(t, tools, map[string]string{
		"echo.json":      `{"name":"echo","tier":"wasm","module":"` + echo + `"}`,
		"witness.json":   `{"name":"witness","tier":"process","command":{"path":"` + witness + `"},"limits":{"timeout_ms":20000}}`,
		"contained.json": `{"name":"contained","tier":"runc","command":{"path":"` + witness + `"}}`,
	})
	if h.allow, err = LoadAllowlist(tools); err != nil {
		t.Fatal(err)
	}
	proc := processDriver(t, shared)
	if len(wrap) > 0 {
		proc = wrap[0](proc)
	}
	h.tiers = Probe(map[string]sandbox.Driver{"wasm": sharedWasm(t), "process": proc})
	cfg := protocol.DefaultConfig()
	cfg.Now = h.clock.Now
	if h.verifier, err = protocol.NewVerifier(cfg); err != nil {
		t.Fatal(err)
	}
	h.openStore()
	h.x = h.newExecutor(concurrency)
	return h
}

func (h *harness) openStore() {
	st, err := store.Open(filepath.Join(h.dir, "agent.db"))
	if err != nil {
		h.t.Fatal(err)
	}
	h.store = st
	h.t.Cleanup(func() { st.Close() })
}

func (h *harness) newExecutor(concurrency int) *Executor {
	x, err := NewExecutor(ExecutorConfig{NodeID: nodeID, Key: nodeKey, Store: h.store, Allowlist: h.allow,
		Tiers: h.tiers, Verifier: h.verifier, Concurrency: concurrency, WorkDir: filepath.Join(h.dir, "work"),
		OnResult: func(p store.Pending) {
			h.notifyMu.Lock()
			h.notified = append(h.notified, p.DispatchID)
			f := h.onResult
			h.notifyMu.Unlock()
			if f != nil {
				f(p)
			}
		}})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(x.Close)
	return x
}

// dispatch builds an unsigned dispatch of tool with params for this node,
// valid for a minute from now, with a fresh id and nonce.
func (h *harness) dispatch(tool, params string, mod ...func(*protocol.Dispatch)) *protocol.Dispatch {
	h.seq++
	nonce := make([]byte, 16)
	rand.Read(nonce)
	e, _ := h.allow.Lookup(tool)
	d := &protocol.Dispatch{
		Type: "writ.dispatch/v1", ID: fmt.Sprintf("dsp-%d", h.seq), IntentID: fmt.Sprintf("int-%d", h.seq),
		Node: nodeID, Tool: tool, ToolManifestHash: e.Hash, Params: jsontext.Value(params),
		Sandbox: e.Manifest.Tier, IssuedAt: protocol.FormatTime(h.clock.Now()),
		ExpiresAt: protocol.FormatTime(h.clock.Now().Add(time.Minute)),
		Nonce:     base64.StdEncoding.EncodeToString(nonce), Fence: uint64(h.seq), KeyID: "server-1",
	}
	if d.ToolManifestHash == "" {
		d.ToolManifestHash, d.Sandbox = protocol.HashBytes([]byte("nothing")), "wasm"
	}
	d.PayloadHash, _ = protocol.PayloadHash(tool, []byte(params))
	for _, m := range mod {
		m(d)
	}
	return d
}

func sign(t *testing.T, d *protocol.Dispatch, key ed25519.PrivateKey) []byte {
	t.Helper()
	if err := d.Sign(key); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (h *harness) witnessParams(wait bool) string {
	p := map[string]string{"file": h.witness}
	if wait {
		p["wait_for"] = h.release
	}
	b, _ := json.Marshal(p, json.Deterministic(true))
	return string(b)
}

// runs counts the witness tool's runs.
func (h *harness) runs() int {
	b, err := os.ReadFile(h.witness)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// outbox returns the outbox's results, verified with the node key.
func (h *harness) outbox() map[string]*protocol.Result {
	h.t.Helper()
	pending, err := h.store.Outbox()
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]*protocol.Result{}
	for _, p := range pending {
		r, err := h.verifier.VerifyResult(p.Result, nodes)
		if err != nil {
			h.t.Fatalf("result of %s does not verify: %v", p.DispatchID, err)
		}
		if r.DispatchID != p.DispatchID || r.Node != nodeID || r.KeyID != nodeID {
			h.t.Fatalf("result %+v filed under %s", r, p.DispatchID)
		}
		if r.Version() != 2 || r.Output != "" {
			h.t.Fatalf("result of %s: got version %d with output %q, want a v2 without", p.DispatchID, r.Version(), r.Output)
		}
		if err := r.CheckCaptured(p.Output); err != nil {
			h.t.Fatalf("output kept beside the result of %s: %v", p.DispatchID, err)
		}
		// For the assertions: the captured output, checked against the
		// signed hash, where a v1 result carried it.
		r.Output, r.OutputEncoding = protocol.EncodeOutput(p.Output)
		out[p.DispatchID] = r
	}
	return out
}

// waitFor polls cond for up to eventually.Timeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventually.True(t, what, cond)
}
