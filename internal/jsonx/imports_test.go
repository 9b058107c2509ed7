package jsonx

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// encodingJSONAllowed lists the only files that may import encoding/json,
// each with its reason; the import itself must carry a comment saying why.
var encodingJSONAllowed = map[string]string{
	"controlplane/internal/tools/instance.go": "jsonschema validates numbers as encoding/json's json.Number",
	"internal/jsonx/jsonx_test.go":            "the reference Stable is compared with, byte for byte",
}

// TestOneJSONLibrary reads every Go file of the repository (tests included):
// JSON goes through github.com/go-json-experiment/json, and encoding/json is
// imported only by the files above, each import commented.
func TestOneJSONLibrary(t *testing.T) {
	root := filepath.Join("..", "..")
	found := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p != "encoding/json" && !strings.HasPrefix(p, "encoding/json/") {
				continue
			}
			found[rel] = true
			if _, ok := encodingJSONAllowed[rel]; !ok {
				t.Errorf("%s imports %s: use github.com/go-json-experiment/json (with internal/jsonx's options), or add the file with its reason to encodingJSONAllowed", rel, p)
			} else if imp.Doc == nil && imp.Comment == nil {
				t.Errorf("%s imports %s without a comment giving the reason", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for file := range encodingJSONAllowed {
		if !found[file] {
			t.Errorf("%s is allowed encoding/json but no longer imports it: remove it from encodingJSONAllowed", file)
		}
	}
	if len(found) == 0 {
		t.Fatal("the scan found no file at all: it no longer reads the repository")
	}
}
