package mcpserver

import (
	"testing"
	"time"
)

func TestCPTime(t *testing.T) {
	var at time.Duration
	clock := func() time.Time { return time.Unix(0, 0).Add(at) }
	type step struct {
		at    time.Duration
		op    string // "begin" a request, "end" the oldest open one, "total"
		total time.Duration
	}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"one request", []step{{1, "begin", 0}, {4, "end", 0}, {9, "total", 3}}},
		{"two in turn", []step{{0, "begin", 0}, {2, "end", 0}, {5, "begin", 0}, {6, "end", 0}, {7, "total", 3}}},
		{"overlapping count once", []step{{0, "begin", 0}, {1, "begin", 0}, {3, "end", 0}, {5, "end", 0}, {8, "total", 5}}},
		{"one in flight counts up to now", []step{{2, "begin", 0}, {6, "total", 4}, {7, "end", 0}, {9, "total", 5}}},
		{"none", []step{{3, "total", 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cp := &cpTime{now: clock}
			var open []func()
			for _, s := range c.steps {
				at = s.at
				switch s.op {
				case "begin":
					open = append(open, cp.begin())
				case "end":
					open[0]()
					open = open[1:]
				case "total":
					if got := cp.Total(); got != s.total {
						t.Fatalf("at %d: total %d, want %d", s.at, got, s.total)
					}
				}
			}
		})
	}
	var none *cpTime
	none.begin()()
	if none.Total() != 0 {
		t.Fatal("a nil cpTime measured something")
	}
}
