// Package testtier draws the line of the fast test tier: what `go test
// -short` (make test-short) leaves out, each test saying why in one
// greppable line, `testtier.Slow(t, "why")`. make test and CI never pass
// -short, so everything still runs there; under CI=true a -short run fails
// instead of leaving tests out.
package testtier

import (
	"os"
	"testing"
)

// Slow skips the test under -short, with "not in -short: " and why (a
// cluster, a browser, the escape suite, a benchmark...). Under CI=true it
// fails the test instead: CI runs every test.
func Slow(t testing.TB, why string) {
	t.Helper()
	if !testing.Short() {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("-short under CI=true: CI runs every test, and this one is not in -short (%s)", why)
	}
	t.Skip("not in -short: " + why)
}

// Rounds is full, or short under -short: how many times a test that
// repeats (crashes, restarts) goes round in each tier.
func Rounds(full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}

// Root skips the test when it does not run as root, saying what it needs
// root for; under CI=true it fails instead: CI runs as root and every test
// runs there.
func Root(t testing.TB, why string) {
	t.Helper()
	if geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("needs root (%s), and CI=true", why)
	}
	t.Skip("SKIPPING: needs root (" + why + "); CI=true makes this a failure")
}

// geteuid is os.Geteuid; the package's test changes it.
var geteuid = os.Geteuid
