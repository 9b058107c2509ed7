package eventually

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, as the real one does.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// call runs f with a recorder on a goroutine of its own, as the testing
// package runs a test, and returns what Fatalf said ("" if nothing).
func call(f func(testing.TB)) string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.msg
}

// TestTrue: a condition that holds at once, or after some polls, returns
// without failing; one that never holds fails naming what was awaited,
// not before the timeout has passed.
func TestTrue(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	if msg := call(func(tb testing.TB) { True(tb, "at once", func() bool { n.Add(1); return true }) }); msg != "" || n.Load() != 1 {
		t.Fatalf("a true condition: failed %q after %d polls, want no failure after 1", msg, n.Load())
	}
	n.Store(0)
	if msg := call(func(tb testing.TB) { True(tb, "the fifth poll", func() bool { return n.Add(1) == 5 }) }); msg != "" || n.Load() != 5 {
		t.Fatalf("true at the fifth poll: failed %q after %d polls, want no failure after 5", msg, n.Load())
	}
	start := time.Now()
	msg := call(func(tb testing.TB) { Within(tb, 100*time.Millisecond, "the moon", func() bool { return false }) })
	if elapsed := time.Since(start); elapsed < 100*time.Millisecond {
		t.Fatalf("gave up after %s, before its timeout of 100ms", elapsed)
	}
	if !strings.Contains(msg, "waiting for the moon") {
		t.Fatalf("failure %q does not say what was awaited", msg)
	}
}

// TestNoError: the wait ends at the first nil; a failure reports the
// last error, so the message says where the wait stopped.
func TestNoError(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	f := func() error {
		if n.Add(1) < 3 {
			return errors.New("still busy")
		}
		return nil
	}
	if msg := call(func(tb testing.TB) { NoError(tb, "idle", f) }); msg != "" || n.Load() != 3 {
		t.Fatalf("failed %q after %d polls, want no failure after 3", msg, n.Load())
	}
	start := time.Now()
	msg := call(func(tb testing.TB) {
		NoErrorWithin(tb, 100*time.Millisecond, "the tide", func() error { return errors.New("still low") })
	})
	if elapsed := time.Since(start); elapsed < 100*time.Millisecond {
		t.Fatalf("gave up after %s, before its timeout of 100ms", elapsed)
	}
	if !strings.Contains(msg, "waiting for the tide: still low") {
		t.Fatalf("failure %q does not say what was awaited and the last error", msg)
	}
	if err := poll(30*time.Millisecond, func() error { return fmt.Errorf("%d left", n.Add(1)) }); err == nil || !strings.HasSuffix(err.Error(), " left") {
		t.Fatalf("poll = %v, want the last error", err)
	}
	before := n.Load()
	if err := poll(0, func() error { n.Add(1); return errors.New("no") }); err == nil || n.Load() != before+1 {
		t.Fatalf("a zero timeout: %v after %d polls, want an error after exactly 1", err, n.Load()-before)
	}
}
