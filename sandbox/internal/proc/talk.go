package proc

import (
	"io"
	"sync"

	"github.com/writhq/writ/sandbox/internal/capture"
)

// tee hands what the process writes to the capture first, then to the
// conversation; once the conversation is over its bytes are only captured,
// so that the process never blocks on a reader that went away.
type tee struct {
	capture *capture.Writer
	pw      *io.PipeWriter

	mu   sync.Mutex
	done bool
}

func (t *tee) Write(p []byte) (int, error) {
	n, _ := t.capture.Write(p)
	t.mu.Lock()
	done := t.done
	t.mu.Unlock()
	if !done {
		if _, err := t.pw.Write(p); err != nil {
			t.mu.Lock()
			t.done = true
			t.mu.Unlock()
		}
	}
	return n, nil
}

// end is called when the process's stdout reached end of file.
func (t *tee) end() { t.pw.Close() }
