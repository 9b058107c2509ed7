package cli

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestSetMemoryLimit: limits.memory_limit sets the runtime's soft limit;
// 0 leaves it; under 64 MiB is refused; GOMEMLIMIT, when set, wins.
func TestSetMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	for _, tc := range []struct {
		name    string
		env     string
		n       int64
		wantErr bool
		want    int64
	}{
		{"none", "", 0, false, math.MaxInt64},
		{"set", "", 512 << 20, false, 512 << 20},
		{"too small", "", 1 << 20, true, math.MaxInt64},
		{"GOMEMLIMIT wins", "256MiB", 512 << 20, false, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", tc.env)
			debug.SetMemoryLimit(math.MaxInt64)
			err := setMemoryLimit(tc.n)
			if (err != nil) != tc.wantErr {
				t.Fatalf("setMemoryLimit(%d) = %v, want error %v", tc.n, err, tc.wantErr)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Fatalf("limit %d, want %d", got, tc.want)
			}
		})
	}
}
