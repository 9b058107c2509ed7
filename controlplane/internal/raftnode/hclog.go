package raftnode

import (
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// hclogFor adapts the server's slog logger for what takes an hclog.Logger:
// hashicorp/raft, its transport and file snapshots, and the raft-wal store
// when one is opened (to migrate it, or to measure it) (memberlist
// takes a standard logger: controlplane's gossipLog bridges it). Every line
// arrives at slog's Info level, with hclog's own level, such as [WARN], at
// the start of its message.
func hclogFor(log *slog.Logger, name string) hclog.Logger {
	std := slog.NewLogLogger(log.Handler(), slog.LevelInfo)
	return hclog.FromStandardLogger(std, &hclog.LoggerOptions{Name: name, Level: hclog.Info})
}
