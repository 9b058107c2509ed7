package benchstat

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestAlternate(t *testing.T) {
	spin := func() error { // uses at least 2 ms of CPU, however long that takes
		for c := ProcessCPU(); ProcessCPU()-c < 2*time.Millisecond; {
		}
		return nil
	}
	sleep := func() error { time.Sleep(3 * time.Millisecond); return nil }
	f, err := Alternate([]Side{{"spin", spin}, {"sleep", sleep}}, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	if f[0].Name != "spin" || f[1].Name != "sleep" {
		t.Fatalf("figures out of order: %+v", f)
	}
	if f[0].CPU < 2*time.Millisecond || f[0].P50 <= 0 {
		t.Errorf("spin: %+v, want at least 2ms of CPU per run", f[0])
	}
	if f[1].P50 < 3*time.Millisecond || f[1].CPU >= f[0].CPU {
		t.Errorf("sleep: %+v, want at least 3ms of wall and less CPU than spin's %v", f[1], f[0].CPU)
	}

	bad := errors.New("boom")
	if _, err := Alternate([]Side{{"ok", sleep}, {"broken", func() error { return bad }}}, 0, 1); !errors.Is(err, bad) || !strings.Contains(err.Error(), "broken") {
		t.Errorf("error %v, want boom named by its side", err)
	}
}
