package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsPassNoSecretOnCommandLine: no command the README, the docs or the
// deploy scripts show passes a secret as a flag value, where a process
// listing would show it: they use --token-file or the environment.
func TestDocsPassNoSecretOnCommandLine(t *testing.T) {
	t.Parallel()
	files := []string{"../../README.md", "../../Makefile", "../../deploy/cluster.sh", "../../deploy/README.md"}
	docs, _ := filepath.Glob("../../docs/*.md")
	files = append(files, docs...)
	inline := regexp.MustCompile("`((?:bin/)?writ [^`]*)`")
	var commands int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		continued := false
		for n, line := range strings.Split(string(b), "\n") {
			var cmds []string
			trimmed := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#$( "))
			trimmed = strings.TrimPrefix(trimmed, "umask 077; ")
			if continued || isCommand(trimmed) {
				cmds = append(cmds, trimmed)
			}
			continued = (continued || isCommand(trimmed)) && strings.HasSuffix(trimmed, "\\")
			for _, m := range inline.FindAllStringSubmatch(line, -1) {
				cmds = append(cmds, m[1])
			}
			for _, c := range cmds {
				commands++
				for _, arg := range strings.Fields(c) {
					arg = strings.Trim(arg, "[]`'\"")
					if arg == "--token" || strings.HasPrefix(arg, "--token=") || arg == "--secret" {
						t.Errorf("%s:%d: a command passes a secret on its command line: %s", f, n+1, strings.TrimSpace(line))
					}
				}
			}
		}
	}
	if commands < 50 {
		t.Fatalf("found only %d commands in the docs; the scan is broken", commands)
	}
}

func isCommand(s string) bool {
	for _, p := range []string{"writ ", "bin/writ ", "$(BIN)/writ ", `"$WRIT" `, "$WRIT "} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
