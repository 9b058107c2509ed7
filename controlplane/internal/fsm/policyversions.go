package fsm

import "time"

// maxPolicyVersions and maxPolicyVersionBytes bound the policy sets the state
// keeps, the current one included: enough to roll back past a run of bad
// pushes, bounded so that a script applying policies in a loop cannot grow
// the state (and every snapshot) without end.
const (
	maxPolicyVersions     = 64
	maxPolicyVersionBytes = 4 << 20
)

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
// An entry written before versions were kept (it has no time) records none:
// a replica that replays it and one that restored a snapshot from before it
// must keep the same versions.
func (s *State) recordPolicy(index uint64, c PutPolicy) {
	if c.At.IsZero() {
		return
	}
	s.PolicyVersions = append(s.PolicyVersions, PolicyVersion{Version: index, Hash: c.Hash, Text: c.Text, InstalledAt: c.At, RollbackOf: c.RollbackOf})
	drop, size := 0, 0
	for _, v := range s.PolicyVersions {
		size += len(v.Text)
	}
	for n := len(s.PolicyVersions); n-drop > 1 && (n-drop > maxPolicyVersions || size > maxPolicyVersionBytes); drop++ {
		size -= len(s.PolicyVersions[drop].Text)
	}
	if drop > 0 {
		s.PolicyVersions = append([]PolicyVersion(nil), s.PolicyVersions[drop:]...)
	}
}

// PolicyVersions returns the kept policy versions, oldest first; the last is
// the current policy set.
func (rd Reader) PolicyVersions() []PolicyVersion {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	return append([]PolicyVersion(nil), rd.f.state.PolicyVersions...)
}

// PolicyVersion returns one kept version.
func (rd Reader) PolicyVersion(v uint64) (PolicyVersion, bool) {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	for _, p := range rd.f.state.PolicyVersions {
		if p.Version == v {
			return p, true
		}
	}
	return PolicyVersion{}, false
}
