package cli

import (
	"fmt"
	"log/slog"
	"strings"
)

// logger is the logger of a long-running command (server, agent, dev): text
// for a terminal, JSON for a service's journal, at --log-level, or at def
// when the flag is not given.
func (e *env) logger(json bool, def slog.Level) (*slog.Logger, error) {
	level := def
	if e.logLevel != "" {
		if err := level.UnmarshalText([]byte(strings.ToUpper(e.logLevel))); err != nil {
			return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", e.logLevel)
		}
	}
	opts := &slog.HandlerOptions{Level: level}
	if json {
		return slog.New(slog.NewJSONHandler(e.err, opts)), nil
	}
	return slog.New(slog.NewTextHandler(e.err, opts)), nil
}
