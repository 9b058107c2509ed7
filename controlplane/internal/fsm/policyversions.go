package fsm

import "time"

// maxPolicyVersions is how many policy sets the state keeps, the current one
// included: enough to roll back past a run of bad pushes, bounded so that a
// script applying policies in a loop cannot grow the state without end.
const maxPolicyVersions = 64

// PolicyVersion is one installed policy set. Its version is the Raft index of
// the entry that installed it: the same on every replica, whichever snapshot
// each restored, and increasing with every install.
type PolicyVersion struct {
	Version     uint64    `json:"version"`
	Hash        string    `json:"hash"`
	Text        string    `json:"text"`
	InstalledAt time.Time `json:"installed_at"`
	RollbackOf  uint64    `json:"rollback_of,omitzero"`
}

// recordPolicy appends the policy set installed at index to the versions.
func (s *State) recordPolicy(index uint64, c PutPolicy) {
	at := c.At
	if at.IsZero() {
		at = s.Clock
	}
	s.PolicyVersions = append(s.PolicyVersions, PolicyVersion{Version: index, Hash: c.Hash, Text: c.Text, InstalledAt: at, RollbackOf: c.RollbackOf})
	if n := len(s.PolicyVersions); n > maxPolicyVersions {
		s.PolicyVersions = append([]PolicyVersion(nil), s.PolicyVersions[n-maxPolicyVersions:]...)
	}
}

// PolicyVersions returns the kept policy versions, oldest first; the last is
// the current policy set.
func (f *FSM) PolicyVersions() []PolicyVersion {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return append([]PolicyVersion(nil), f.state.PolicyVersions...)
}

// PolicyVersion returns one kept version.
func (f *FSM) PolicyVersion(v uint64) (PolicyVersion, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, p := range f.state.PolicyVersions {
		if p.Version == v {
			return p, true
		}
	}
	return PolicyVersion{}, false
}
