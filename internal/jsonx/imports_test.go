package jsonx

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path"
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

// jsonImportNames is the one name each package of the JSON library is
// imported under: its own, except the v1 options package, whose own name
// (json) clashes with the library's and which only jsonx imports.
var jsonImportNames = map[string]string{
	"github.com/go-json-experiment/json":          "json",
	"github.com/go-json-experiment/json/jsontext": "jsontext",
	"github.com/go-json-experiment/json/v1":       "jsonv1",
}

// jsonV1Allowed lists the only files that may import the v1 options package.
var jsonV1Allowed = map[string]bool{"internal/jsonx/jsonx.go": true}

// TestOneJSONLibrary reads every Go file of the repository (tests included):
// JSON goes through github.com/go-json-experiment/json, each of its packages
// imported under one name (jsonImportNames), and encoding/json is imported
// only by the files above, each import commented.
func TestOneJSONLibrary(t *testing.T) {
	root := filepath.Join("..", "..")
	found := map[string]bool{}
	err := filepath.WalkDir(root, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && file != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(file, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, file)
		rel = filepath.ToSlash(rel)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if want, ok := jsonImportNames[p]; ok {
				got := path.Base(p)
				if imp.Name != nil {
					got = imp.Name.Name
				}
				if got != want {
					t.Errorf("%s imports %s as %s: import it as %s, the one name the tree uses", rel, p, got, want)
				}
				if strings.HasSuffix(p, "/v1") && !jsonV1Allowed[rel] {
					t.Errorf("%s imports %s: its options are reached through internal/jsonx", rel, p)
				}
				continue
			}
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
