package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// clockOffsetEnv names a file holding an offset of the server's clock, a
// Go duration ("45s", "-45s", "0s"), read again every clockOffsetPoll: the
// fault suite's clock jumps (docs/reliability.md). The offset moves the
// wall clock the control plane reads — the time it puts in the log, checks
// an intent's validity window against and signs dispatches with — as a
// step of the host's clock would; Go times durations (Raft's timeouts, a
// session's silence) on the monotonic clock, which a step does not move.
const clockOffsetEnv = "WRIT_CLOCK_OFFSET_FILE"

const (
	clockOffsetPoll = 100 * time.Millisecond
	// maxClockOffset bounds the offset: a day either way.
	maxClockOffset = 24 * time.Hour
)

// offsetClock is the host's clock moved by the offset in a file.
type offsetClock struct {
	path string
	off  atomic.Int64 // nanoseconds
}

// newOffsetClock reads path once: a file that is missing or does not hold
// an offset is an error, and the server does not start.
func newOffsetClock(path string) (*offsetClock, error) {
	c := &offsetClock{path: path}
	d, err := c.read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", clockOffsetEnv, err)
	}
	c.off.Store(int64(d))
	return c, nil
}

func (c *offsetClock) read() (time.Duration, error) {
	b, err := os.ReadFile(c.path)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s does not hold a duration: %w", c.path, err)
	}
	if d > maxClockOffset || d < -maxClockOffset {
		return 0, fmt.Errorf("%s: the offset %s is over %s", c.path, d, maxClockOffset)
	}
	return d, nil
}

// Now is the host's time plus the offset.
func (c *offsetClock) Now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

// watch reads the file again every clockOffsetPoll until ctx ends, and logs
// each jump. A file that cannot be read leaves the offset as it was.
func (c *offsetClock) watch(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(clockOffsetPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d, err := c.read()
		if err != nil {
			continue
		}
		if old := time.Duration(c.off.Swap(int64(d))); old != d {
			log.Warn("the clock jumped", "by", d-old, "offset", d)
		}
	}
}
