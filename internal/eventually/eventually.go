// Package eventually is the tests' one way to wait for something that
// happens in the background: poll a condition until it holds, or fail the
// test after a timeout generous enough for packages run in parallel under
// the race detector on two cores.
package eventually

import (
	"testing"
	"time"
)

// Timeout is how long True and NoError wait. A timeout only bounds how
// long a broken test hangs; it is never what a test asserts.
const Timeout = 20 * time.Second

// maxInterval caps the pause between two polls; the first polls follow
// each other closely so that a fast condition costs a fast test.
const maxInterval = 50 * time.Millisecond

// True polls cond until it returns true, and fails the test with "timed
// out waiting for what" if it has not after Timeout. cond runs on the
// calling goroutine, so it may itself fail the test.
func True(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Within(t, Timeout, what, cond)
}

// Within is True with a timeout of d.
func Within(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := poll(d, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}); err != nil {
		t.Fatalf("timed out after %s waiting for %s", d, what)
	}
}

// NoError polls f until it returns nil, and fails the test with what and
// f's last error if it has not after Timeout: the error says what state
// the wait ended in.
func NoError(t testing.TB, what string, f func() error) {
	t.Helper()
	NoErrorWithin(t, Timeout, what, f)
}

// NoErrorWithin is NoError with a timeout of d.
func NoErrorWithin(t testing.TB, d time.Duration, what string, f func() error) {
	t.Helper()
	if err := poll(d, f); err != nil {
		t.Fatalf("timed out after %s waiting for %s: %v", d, what, err)
	}
}

type notYet struct{}

func (notYet) Error() string { return "not yet" }

var errNotYet error = notYet{}

// poll returns nil as soon as f does, else f's last error once d has
// passed; f runs at least once, and once more after the deadline.
func poll(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	interval := time.Millisecond
	for {
		err := f()
		if err == nil {
			return nil
		}
		if !time.Now().Before(deadline) {
			return err
		}
		time.Sleep(min(interval, time.Until(deadline)+time.Millisecond))
		interval = min(2*interval, maxInterval)
	}
}
