package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/protocol"
)

// jsonOnly are the commands that print JSON only. A new command is refused
// -o text until it is given a text form (textCommands) or added here: the
// test makes the choice explicit.
var jsonOnly = []string{
	"writ agent install", "writ bench load-echo-server", "writ bench load-sandbox", "writ ca create", "writ ca issue", "writ dev credentials", "writ dev register",
	"writ ledger export", "writ ledger watch", "writ sandbox run",
}

func TestEveryCommandHonoursOrRefusesText(t *testing.T) {
	e := &env{}
	root := newRoot(e)
	e.output = "text" // after newRoot, whose flag sets the default
	var refused []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.Name() != "help" && !strings.HasPrefix(c.CommandPath(), "writ completion") {
			err := e.checkOutput(c)
			if err != nil {
				if !strings.Contains(err.Error(), c.CommandPath()+" prints JSON only") {
					t.Errorf("%s: %v", c.CommandPath(), err)
				}
				refused = append(refused, c.CommandPath())
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if !slices.Equal(refused, jsonOnly) {
		t.Fatalf("commands refusing -o text: %q, want %q", refused, jsonOnly)
	}
}

// A refused -o text stops the command before it does anything.
func TestTextRefusedBeforeAnything(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	var out, errb bytes.Buffer
	if code := Main([]string{"ca", "create", "--dir", dir, "-o", "text"}, strings.NewReader(""), &out, &errb); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(errb.String(), "writ ca create prints JSON only") || out.Len() != 0 {
		t.Fatalf("stdout %q, stderr %q", out.String(), errb.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the refused command made %s (%v)", dir, err)
	}
	if code := Main([]string{"version", "-o", "yaml"}, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), `--output must be json or text, not "yaml"`) {
		t.Fatalf("-o yaml: exit %d, %q", code, errb.String())
	}
}

func TestMarkTextCommandsRefusesAStaleName(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a name that is not a command was accepted")
		}
	}()
	saved := textCommands
	defer func() { textCommands = saved }()
	textCommands = append(slices.Clip(saved), "nodes frobnicate")
	newRoot(&env{output: "json"})
}

func TestNodeText(t *testing.T) {
	n := protocol.NodeView{ID: "n-1", Name: "web\t1", Status: "ready", Server: "s1", Tiers: []string{"wasm", "bwrap"},
		Tools: map[string]string{"b": "sha256:2", "a": "sha256:1"}, Concurrency: 8, InFlight: 3, OS: "linux", Arch: "amd64",
		Labels: map[string]string{"zone": "z1", "gpu": "no"}}
	var b bytes.Buffer
	if err := printNodeTable(&b, []protocol.NodeView{n}); err != nil {
		t.Fatal(err)
	}
	want := "NAME   ID   STATUS  SERVER  RUNS  TIERS       TOOLS  OS/ARCH      LAST HEARTBEAT\n" +
		"web?1  n-1  ready   s1      3/8   wasm,bwrap  2      linux/amd64  -\n"
	if b.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := printNode(&b, &n); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"name:            web?1\n", "runs:            3 of 8\n", "labels:          gpu=no,zone=z1\n",
		"token labels:    -\n", "tool a:          sha256:1\ntool b:          sha256:2\n"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("node text lacks %q:\n%s", line, b.String())
		}
	}
}

func TestListText(t *testing.T) {
	var b bytes.Buffer
	e := &env{out: &b, output: "text"}
	raw := []byte(`{"tokens":[{"role":"viewer","id":"t1","expires_at":"2026-01-01T00:00:00Z","sessions":[{"id":"s"}]},{"id":"t2","role":"admin","tenant":"acme"}]}`)
	if err := e.printList(raw); err != nil {
		t.Fatal(err)
	}
	want := "ID  EXPIRES AT            ROLE    SESSIONS      TENANT\n" +
		"t1  2026-01-01T00:00:00Z  viewer  [{\"id\":\"s\"}]  -\n" +
		"t2  -                     admin   -             acme\n"
	if b.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	e.output = "json"
	if err := e.printList(raw); err != nil || !strings.HasPrefix(b.String(), `{"tokens":[{`) {
		t.Fatalf("json: %q %v", b.String(), err)
	}
}
