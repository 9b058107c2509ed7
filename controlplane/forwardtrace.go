package controlplane

import (
	"context"
	"errors"
	"net/http/httptrace"
	"os"
	"sync/atomic"
)

// sendTrace follows a request forwarded to the leader: whether a new
// connection to it was made, and whether the request was written. A leader
// at capacity closes new connections before their handshake
// (handshakeListener): the forward then fails having sent nothing, which
// the follower answers 429 overloaded — nothing was recorded — rather than
// no_leader, which says the write may have been applied.
type sendTrace struct{ connected, wrote atomic.Bool }

func (t *sendTrace) context(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				t.connected.Store(true)
			}
		},
		WroteHeaders: func() { t.wrote.Store(true) },
	})
}

// shed reports whether err, the forward's failure, is the leader closing a
// new connection before the request was written: it turned the request away
// unseen. A connection that timed out instead (a leader paused, or cut off)
// is not: that leader may be gone, and no_leader sends clients elsewhere.
func (t *sendTrace) shed(err error) bool {
	return err != nil && t.connected.Load() && !t.wrote.Load() &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !errors.Is(err, os.ErrDeadlineExceeded)
}
