package protocol

import (
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCodesDeclaredOnce reads the repository's Go source: every error code
// is declared in this package, each value once, and no other package
// declares a code of its own.
func TestCodesDeclaredOnce(t *testing.T) {
	t.Parallel()
	decl := regexp.MustCompile(`(?m)^\s*(?:const\s+)?(\w+)\s+(?:protocol\.)?Code\s*=\s*"([a-z_]+)"`)
	seen := map[string]string{} // value → constant
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			if filepath.Dir(path) != filepath.Join("..", "protocol") {
				t.Errorf("%s declares the code %s (%q): declare it in protocol, once", path, m[1], m[2])
				continue
			}
			if other, ok := seen[m[2]]; ok {
				t.Errorf("the code %q is declared twice: %s and %s", m[2], other, m[1])
			}
			seen[m[2]] = m[1]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 40 {
		t.Fatalf("found %d codes: the scan no longer reads the declarations", len(seen))
	}
}

func TestHTTPStatus(t *testing.T) {
	t.Parallel()
	for code, want := range map[Code]int{
		CodeMalformed:            http.StatusBadRequest,
		CodeUnauthorized:         http.StatusUnauthorized,
		CodePolicyDenied:         http.StatusForbidden,
		CodeNotFound:             http.StatusNotFound,
		CodeLockExists:           http.StatusConflict,
		CodeExpired:              http.StatusUnprocessableEntity,
		CodeOverloaded:           http.StatusTooManyRequests,
		CodeNoLeader:             http.StatusServiceUnavailable,
		CodeAuthorizationChanged: http.StatusServiceUnavailable,
		CodeInternal:             http.StatusInternalServerError,
		CodeToolError:            http.StatusInternalServerError,
		Code("no_such_code"):     http.StatusInternalServerError,
	} {
		if got := HTTPStatus(code); got != want {
			t.Errorf("HTTPStatus(%s) = %d, want %d", code, got, want)
		}
	}
}
