package controlplane

import (
	"net/http"

	"github.com/hashicorp/raft"
	dto "github.com/prometheus/client_model/go"
)

// For TestForwardedInBatches, which runs a cluster (controlplane/localcluster)
// from the external test package.

// The internal paths and headers a follower forwards with.
const (
	BatchPath          = batchPath
	HeaderForwardedFor = headerForwardedFor
	HeaderIndex        = headerIndex
)

// EncodeBatchItem encodes a batch of one submission body from source.
func EncodeBatchItem(source string, body []byte) []byte {
	return encodeBatch([]batchItem{{Source: source, Body: body}})
}

// PeerClient is the client s forwards to other servers with, over its
// server certificate.
func PeerClient(s *Server) *http.Client { return s.cluster.http }

// ObserveLeaderChanges calls f each time s sees the leader change.
func ObserveLeaderChanges(s *Server, f func()) {
	s.node.Raft.RegisterObserver(raft.NewObserver(nil, false, func(o *raft.Observation) bool {
		if _, ok := o.Data.(raft.LeaderObservation); ok {
			f()
		}
		return false
	}))
}

// FailuresOf is how many failures s's limiter has counted against source:
// its burst minus the tokens left (0 for a source it does not track).
func FailuresOf(s *Server, source string) int {
	s.fails.mu.Lock()
	defer s.fails.mu.Unlock()
	fs := s.fails.sources[source]
	if fs == nil {
		return 0
	}
	return s.fails.burst - int(fs.lim.Tokens()+0.5)
}

// HasDashboardSession reports whether s's FSM holds a dashboard session
// whose token hashes to hash.
func HasDashboardSession(s *Server, hash string) bool {
	_, ok := s.reads.Session(hash)
	return ok
}

// IntentIndex is the Raft index at which s's FSM recorded the intent id.
func IntentIndex(s *Server, id string) (uint64, bool) {
	in, ok := s.reads.Intent(id)
	return in.Index, ok
}

// ForwardedInBatches is what s has forwarded in batches: the submissions,
// and the batches that carried them.
func ForwardedInBatches(s *Server) (items, batches uint64, err error) {
	var m dto.Metric
	if err := s.metrics.forwardBatch.Write(&m); err != nil {
		return 0, 0, err
	}
	return uint64(m.GetHistogram().GetSampleSum()), m.GetHistogram().GetSampleCount(), nil
}

// BatcherIdle reports whether no submission waits for a batch at s and no
// batch of s's is in flight.
func BatcherIdle(s *Server) bool {
	b := s.cluster.batches
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.live == 0 && len(b.inFlight) == 0
}

// FailureSourceTracked reports whether s's limiter tracks failures of
// source at all.
func FailureSourceTracked(s *Server, source string) bool {
	s.fails.mu.Lock()
	defer s.fails.mu.Unlock()
	_, ok := s.fails.sources[source]
	return ok
}
