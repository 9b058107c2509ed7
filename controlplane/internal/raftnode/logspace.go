package raftnode

import (
	"errors"
	"syscall"

	"github.com/hashicorp/raft"
)

// spaceWatch tells Config.OnLogSpace how each append to the log went: full
// when the store refused it for want of space (ENOSPC, EDQUOT), not full
// when it stored it. Raft's own handling of the error is unchanged: a leader
// steps down, a follower refuses the AppendEntries and the leader sends the
// entries again later, up to about 10 s apart once its retries back off.
type spaceWatch struct {
	logStore
	report func(full bool)
}

// watchSpace wraps w when report is set.
func watchSpace(w logStore, report func(full bool)) logStore {
	if report == nil {
		return w
	}
	return &spaceWatch{logStore: w, report: report}
}

func (s *spaceWatch) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s *spaceWatch) StoreLogs(logs []*raft.Log) error {
	err := s.logStore.StoreLogs(logs)
	if err == nil || NoSpace(err) {
		s.report(err != nil)
	}
	return err
}

// NoSpace reports whether err is a write refused for want of space: the
// file system is full, or the user's quota is.
func NoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
