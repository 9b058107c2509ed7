package raftnode

import (
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// hclogFor adapts the server's slog logger for hashicorp libraries: the one
// place where their logging is bridged.
func hclogFor(log *slog.Logger, name string) hclog.Logger {
	std := slog.NewLogLogger(log.Handler(), slog.LevelInfo)
	return hclog.FromStandardLogger(std, &hclog.LoggerOptions{Name: name, Level: hclog.Info})
}
