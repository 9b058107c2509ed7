package cli

import "testing"

func TestStateExit(t *testing.T) {
	for _, c := range []struct {
		state  string
		waited bool
		want   int
	}{
		{"completed", false, 0},
		{"completed", true, 0},
		{"pending_approval", false, 0},
		{"dispatched", false, 0},
		{"queued", false, 0},
		{"pending_approval", true, exitWaiting},
		{"dispatched", true, exitWaiting},
		{"denied", false, exitRefused},
		{"rejected", true, exitRefused},
		{"expired", true, exitRefused},
		{"canceled", false, exitRefused},
		{"failed", true, exitFailed},
		{"unknown", false, exitFailed},
	} {
		if got := stateExit(c.state, c.waited); got != c.want {
			t.Errorf("stateExit(%q, waited %v) = %d, want %d", c.state, c.waited, got, c.want)
		}
	}
}
