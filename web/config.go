package web

import (
	"errors"
	"log/slog"
	"time"
)

// Config configures the dashboard.
type Config struct {
	Backend Backend
	// Secure is set when the API is served over TLS: cookies are then Secure
	// and __Host- prefixed.
	Secure bool
	// SessionTTL is how long a sign-in lasts (never past its token).
	SessionTTL time.Duration
	// EventBuffer is how many events /v1/events keeps for clients resuming
	// after a reconnect; one further behind is told to reload ("reset").
	EventBuffer int
	// SendQueue is how many events may wait for one WebSocket client; a
	// client that falls further behind is disconnected, never waited for.
	SendQueue int
	// Changes is how many batches of changes may wait to be turned into
	// events; past it, clients are told to reload.
	Changes int
	// IdleAfter is how long events are still made after the last client
	// left or the last page was served. Past it, and before anyone has
	// watched, the server makes none (they cost every server CPU on every
	// change); a client resuming from before then is told to reload.
	IdleAfter time.Duration
	Logger    *slog.Logger
}

// DefaultConfig returns sessions of 8 hours, 4096 buffered events and 256
// queued per client, and no events made after 10 minutes with no one watching.
func DefaultConfig() Config {
	return Config{SessionTTL: 8 * time.Hour, EventBuffer: 4096, SendQueue: 256, Changes: 1024, IdleAfter: 10 * time.Minute}
}

// Validate reports a configuration the dashboard cannot run with.
func (c Config) Validate() error {
	switch {
	case c.Backend == nil:
		return errors.New("web: no backend")
	case c.SessionTTL < time.Minute || c.SessionTTL > 30*24*time.Hour:
		return errors.New("web: SessionTTL must be between a minute and 30 days")
	case c.EventBuffer < 16 || c.SendQueue < 4 || c.Changes < 4:
		return errors.New("web: EventBuffer must be at least 16, SendQueue and Changes at least 4")
	case c.IdleAfter <= 0:
		return errors.New("web: IdleAfter must be positive")
	}
	return nil
}
