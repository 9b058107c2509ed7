// Package docscheck holds the check that the README and docs/ are
// self-contained: every relative link and every file they name exists in the
// repository, every #anchor names a heading, and nothing points outside it.
package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	link     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	code     = regexp.MustCompile("`([^`\n]+)`")
	heading  = regexp.MustCompile(`(?m)^#{1,6} +(.+)$`)
	pathLike = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/?$`)
	// A file named in code: a path with a directory and a known extension,
	// or a directory path ending in a slash.
	fileExt = regexp.MustCompile(`\.(go|md|json|sh|cedar|html|js|css|png|service|plist|txt|wat|yaml|yml|mod)$`)
	outside = []string{"../shared", "DESIGN.md", "PROTOCOL.md", "STYLE.md"}
)

// docs returns the markdown files to check, relative to the repository root.
func docs(t *testing.T, root string) []string {
	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(more) == 0 {
		t.Fatalf("no docs found under %s: %v", root, err)
	}
	for _, f := range more {
		rel, _ := filepath.Rel(root, f)
		files = append(files, rel)
	}
	return files
}

// slug is the anchor a heading gets: lower case, punctuation dropped,
// spaces to hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func anchors(text string) map[string]bool {
	a := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(text, -1) {
		a[slug(m[1])] = true
	}
	return a
}

func TestDocsSelfContained(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{}
	for _, f := range docs(t, root) {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(b)
	}
	for f, text := range texts {
		dir := filepath.Dir(f)
		for _, o := range outside {
			if strings.Contains(text, o) {
				t.Errorf("%s names %s, which is not in the repository", f, o)
			}
		}
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				t.Errorf("%s links outside the repository: %s", f, target)
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := f
			if file != "" {
				dest = filepath.Join(dir, file)
				if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
					t.Errorf("%s links to %s, which does not exist", f, target)
					continue
				}
			}
			if anchor != "" {
				destText, ok := texts[filepath.Clean(dest)]
				if !ok {
					continue // an anchor in a file that is not markdown we read
				}
				if !anchors(destText)[anchor] {
					t.Errorf("%s links to %s: %s has no heading with that anchor", f, target, dest)
				}
			}
		}
		for _, m := range code.FindAllStringSubmatch(text, -1) {
			p := m[1]
			if !pathLike.MatchString(p) || !strings.Contains(strings.TrimSuffix(p, "/"), "/") {
				continue
			}
			if !fileExt.MatchString(p) && !strings.HasSuffix(p, "/") {
				continue
			}
			if strings.HasPrefix(p, ".") && !strings.HasPrefix(p, "./") && !strings.HasPrefix(p, "../") {
				continue // .dev/…, .cluster/…: made at run time
			}
			first, _, _ := strings.Cut(p, "/")
			if first == strings.ToUpper(first) {
				continue // DIR/dev.json: a placeholder
			}
			if !inRepo(root, dir, first) && !strings.HasPrefix(p, "testdata/") {
				continue // mytool/registration.json: a file a command makes
			}
			if !exists(root, dir, p) {
				t.Errorf("%s names %s, which is not in the repository", f, p)
			}
		}
	}
}

// exists reports whether p names a file or folder of the repository: from
// its root, from the document's folder, or, for a path such as
// testdata/fuzz/ that every package may have, below some package.
func exists(root, dir, p string) bool {
	for _, base := range []string{root, filepath.Join(root, dir)} {
		if _, err := os.Stat(filepath.Join(base, p)); err == nil {
			return true
		}
	}
	found := false
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || found {
			return filepath.SkipDir
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, p)); err == nil && d.IsDir() {
			found = true
		}
		return nil
	})
	return found
}

// inRepo reports whether a path's first element names something in the
// repository, at its top or beside the document: only such a path claims
// to be a file of the repository.
func inRepo(root, dir, first string) bool {
	for _, base := range []string{root, filepath.Join(root, dir)} {
		if _, err := os.Stat(filepath.Join(base, first)); err == nil {
			return true
		}
	}
	return false
}
