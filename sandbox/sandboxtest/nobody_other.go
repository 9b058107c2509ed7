//go:build !linux

package sandboxtest

import "testing"

// asNobody runs the test again as uid 65534 on Linux only.
func asNobody(t *testing.T) {}
