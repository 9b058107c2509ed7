package nodeagent

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/writhq/writ/protocol"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAllowlistLoadsAndHashesAsWritten(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"b.json":    "{\n  \"tier\": \"wasm\",\n  \"name\": \"echo\",\n  \"module\": \"/opt/echo.wasm\"\n}\n",
		"a.json":    `{"name":"grep","tier":"bwrap","command":{"path":"/usr/bin/grep","args":["-F","--","{{p}}"]},"limits":{"timeout_ms":30000}}`,
		"README.md": "not a manifest",
	})
	a, err := LoadAllowlist(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The hash is of the JCS form of the manifest as written: members
	// sorted, no whitespace, no defaults added.
	sum := sha256.Sum256([]byte(`{"module":"/opt/echo.wasm","name":"echo","tier":"wasm"}`))
	wantEcho := "sha256:" + hex.EncodeToString(sum[:])
	e, ok := a.Lookup("echo")
	if !ok || e.Hash != wantEcho || e.Manifest.Tier != "wasm" || e.File != filepath.Join(dir, "b.json") {
		t.Fatalf("Lookup(echo) = %+v, %v; want hash %s from b.json", e, ok, wantEcho)
	}
	if _, ok := a.Lookup("cat"); ok {
		t.Fatal("Lookup(cat) found a tool nobody allowed")
	}
	refs := a.Refs()
	if len(refs) != 2 || refs[0].Name != "echo" || refs[1].Name != "grep" || refs[0].Hash != wantEcho {
		t.Fatalf("Refs() = %+v, want echo then grep", refs)
	}
	// Spelling out a default limit makes another tool: the hash is of what
	// the owner wrote, not of sandbox.Manifest.Hash's filled-in form.
	g, _ := a.Lookup("grep")
	bare, err := protocol.ManifestHash([]byte(`{"name":"grep","tier":"bwrap","command":{"path":"/usr/bin/grep","args":["-F","--","{{p}}"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if bare == g.Hash {
		t.Fatal("a manifest with an explicit default limit hashed like one without")
	}
	canon, _ := protocol.Canonicalize([]byte(`{"name":"grep","tier":"bwrap","command":{"path":"/usr/bin/grep","args":["-F","--","{{p}}"]},"limits":{"timeout_ms":30000}}`))
	if protocol.HashBytes(canon) != g.Hash {
		t.Fatal("hash is not protocol.HashBytes(protocol.Canonicalize(file))")
	}
}

func TestAllowlistRefusesWhatItCannotTrust(t *testing.T) {
	good := `{"name":"echo","tier":"wasm","module":"/opt/echo.wasm"}`
	for name, c := range map[string]struct {
		files map[string]string
		mode  os.FileMode // of bad.json, 0 for 0644
		dir   os.FileMode // of the directory, 0 for 0700
		want  string
	}{
		"not json":           {files: map[string]string{"bad.json": `{"name":`}, want: "bad.json"},
		"unknown field":      {files: map[string]string{"bad.json": `{"name":"x","tier":"wasm","module":"/m.wasm","shell":true}`}, want: "bad.json"},
		"bad tier":           {files: map[string]string{"bad.json": `{"name":"x","tier":"vm","module":"/m.wasm"}`}, want: "bad.json"},
		"duplicate name":     {files: map[string]string{"a.json": good, "bad.json": good}, want: `a.json and `},
		"world-writable":     {files: map[string]string{"bad.json": good}, mode: 0o666, want: "bad.json may be written by other users"},
		"group-writable dir": {files: map[string]string{"a.json": good}, dir: 0o770, want: "may be written by other users"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, c.files)
			if c.mode != 0 {
				os.Chmod(filepath.Join(dir, "bad.json"), c.mode)
			}
			if c.dir != 0 {
				os.Chmod(dir, c.dir)
			}
			_, err := LoadAllowlist(dir)
			if !errors.Is(err, ErrAllowlist) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrAllowlist mentioning %q", err, c.want)
			}
		})
	}
	if _, err := LoadAllowlist(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, ErrAllowlist) {
		t.Fatalf("missing directory: got %v, want ErrAllowlist", err)
	}
	a, err := LoadAllowlist(t.TempDir())
	if err != nil || a.Len() != 0 || len(a.Refs()) != 0 {
		t.Fatalf("empty directory: got %v, %v; want an empty allowlist", a, err)
	}
}
