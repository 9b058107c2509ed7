package ledger

import "os"

// Crash drops the store's file handles as a crash of the process would: no
// Sync, no head written. What was written stays in the files (the page cache
// survives a process crash); tests cut it back to model a machine crash.
func Crash(s *DiskStore) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed.Store(true)
	return s.closeFiles()
}

// BreakLeavesFile makes every write and fsync of leaves.dat fail until the
// returned function puts the file back, as a failing disk would.
func BreakLeavesFile(s *DiskStore) (mend func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	good := s.leaves
	bad, err := os.Open(os.DevNull)
	if err != nil {
		panic(err)
	}
	bad.Close()
	s.leaves = bad
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.leaves = good
	}
}
