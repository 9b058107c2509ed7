package controlplane_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/internal/eventually"
)

// lockedBuffer is a log sink many goroutines write.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// At Info a server logs one line per admission (with its decision) and one
// per result, naming the intent; never its params or output.
func TestOneLogLinePerAdmissionAndResult(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	d := startDevWith(t, func(c *controlplane.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	ctx := context.Background()
	r, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"SECRET-PARAM"}`), nil, 10*time.Second)
	if err != nil || r.State != "completed" {
		t.Fatalf("submit: %+v %v", r, err)
	}
	id := "intent_id=" + r.IntentID
	var admitted, recorded string
	eventually.True(t, "the result's log line", func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			switch {
			case strings.Contains(line, `msg="intent admitted"`) && strings.Contains(line, id):
				admitted = line
			case strings.Contains(line, `msg="result recorded"`) && strings.Contains(line, id):
				recorded = line
			}
		}
		return recorded != ""
	})
	if !strings.Contains(admitted, "allow=true") || !strings.Contains(admitted, "tool=echo") {
		t.Errorf("admission line: %q", admitted)
	}
	if !strings.Contains(recorded, "status=ok") || !strings.Contains(recorded, "state=completed") || !strings.Contains(recorded, "receipt=") {
		t.Errorf("result line: %q", recorded)
	}
	if strings.Contains(logs.String(), "SECRET-PARAM") {
		t.Error("the log holds the intent's params or output")
	}
}
