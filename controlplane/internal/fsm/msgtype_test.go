package fsm

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMsgTypes reads every MsgType constant declared in this package's
// source, wherever it is declared (each beside its command): no two may share
// a number, since the number is the log format, and each must have a name in
// MsgType.String.
func TestMsgTypes(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]string{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range msgTypeSpecs(f) {
			for i, n := range v.Names {
				lit, ok := v.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.INT {
					t.Errorf("%s: %s is not a literal number: the log format must say it plainly", file, n.Name)
					continue
				}
				num, err := strconv.ParseUint(lit.Value, 0, 8)
				if err != nil {
					t.Errorf("%s: %s = %s: %v", file, n.Name, lit.Value, err)
					continue
				}
				if other, dup := seen[num]; dup {
					t.Errorf("%s and %s are both message type %d", other, n.Name, num)
				}
				seen[num] = n.Name
				if got := MsgType(num).String(); got == fmt.Sprintf("msg(%d)", num) {
					t.Errorf("%s (%d) has no name in MsgType.String", n.Name, num)
				}
			}
		}
	}
	if len(seen) < 20 {
		t.Fatalf("found %d message types in the source, want every one (at least 20): %v", len(seen), seen)
	}
}

// msgTypeSpecs returns the constant declarations of type MsgType in f.
func msgTypeSpecs(f *ast.File) []*ast.ValueSpec {
	var out []*ast.ValueSpec
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			if v := s.(*ast.ValueSpec); isIdent(v.Type, "MsgType") {
				out = append(out, v)
			}
		}
	}
	return out
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
