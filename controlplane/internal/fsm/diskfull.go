package fsm

import (
	"errors"
	"log/slog"
	"syscall"
	"time"

	"github.com/writhq/writ/ledger"
)

// Waits between tries of a ledger write the disk had no space for.
const (
	spaceWaitFirst = 50 * time.Millisecond
	spaceWaitMax   = 2 * time.Second
)

// noSpace reports whether err is a write refused for want of space (the
// file system is full, or the user's quota is): the store is unchanged, and
// the same write may succeed once there is space. A store whose fsync failed
// is not: it takes no more writes, whatever the reason.
func noSpace(err error) bool {
	return (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) && !errors.Is(err, ledger.ErrSyncFailed)
}

// OnNoSpace sets fn, called (from the FSM's goroutine, never blocking)
// each time the FSM is about to wait for space: the server hands its
// leadership on, as a leader whose FSM waits answers nothing.
func (f *FSM) OnNoSpace(fn func()) { f.noSpaceHook.Store(&fn) }

func (f *FSM) noSpaceNow() {
	if fn := f.noSpaceHook.Load(); fn != nil {
		(*fn)()
	}
}

// SetLogger sets where the FSM tells of writes it waits to make (a full
// disk); slog.Default() until set.
func (f *FSM) SetLogger(l *slog.Logger) { f.log.Store(l) }

func (f *FSM) logger() *slog.Logger {
	if l := f.log.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// untilSpace runs write, a write to the ledger, again while it fails for
// want of space, waiting longer each time (up to spaceWaitMax), and returns
// what it ends with. The entry being applied is committed: it cannot be
// refused, and the state must not go past a receipt the ledger lacks, so the
// FSM waits. Raft goes on without this replica meanwhile (once its entries
// are not applied, it stops taking more, as a slow server would), and it
// catches up when space returns; a panic instead would leave a server that
// cannot start again until then. The wait reads no clock into the state.
func (f *FSM) untilSpace(what string, write func() error) error {
	err := write()
	if !noSpace(err) {
		return err
	}
	began, wait := time.Now(), spaceWaitFirst
	f.logger().Error("the disk is full: waiting for space to "+what, "err", err)
	for noSpace(err) {
		f.noSpaceNow()
		time.Sleep(wait)
		wait = min(2*wait, spaceWaitMax)
		err = write()
	}
	f.logger().Warn("space again: "+what, "waited", time.Since(began).Round(time.Millisecond), "err", err)
	return err
}
