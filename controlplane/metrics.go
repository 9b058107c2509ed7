package controlplane

import (
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus metrics, on a registry of its own so
// that several servers can run in one process (tests).
type metrics struct {
	reg            *prometheus.Registry
	admissions     *prometheus.CounterVec
	applySeconds   prometheus.Histogram
	groupSize      prometheus.Histogram
	forwardBatch   prometheus.Histogram
	inFlight       prometheus.Gauge
	leaderChange   prometheus.Counter
	handshakesShed prometheus.Counter
	submitSeconds  *prometheus.HistogramVec
	refused        *prometheus.CounterVec
	// Failed authentications, and those answered overloaded past their
	// source's budget.
	authFailures    prometheus.Counter
	failuresLimited prometheus.Counter
	// Node sessions.
	sessions       prometheus.Gauge
	sessionRefused *prometheus.CounterVec
	dispatchesSent prometheus.Counter
	nodeReports    *prometheus.CounterVec
	// Admissions and approvals checked again: the FSM refused them
	// authorization_changed (authcheck.go).
	rechecks prometheus.Counter
}

// newGroupSize is created before Raft starts, which reports to it.
func newGroupSize() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "writ_raft_group_commands", Help: "Commands per Raft entry proposed with group commit (admissions).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 12),
	})
}

func newMetrics(node *raft.Raft, groupSize prometheus.Histogram, queue func() int) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(), groupSize: groupSize,
		admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "writ_admissions_total", Help: "Intents recorded, by final or waiting state and error code.",
		}, []string{"state", "code"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "writ_requests_refused_total", Help: "Requests refused without recording anything, by code.",
		}, []string{"code"}),
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "writ_auth_failures_total", Help: "Requests that failed authentication (malformed, unknown key, bad signature or token).",
		}),
		failuresLimited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "writ_auth_failures_limited_total", Help: "Failed authentications past their source's budget, answered 429 overloaded after a delay.",
		}),
		applySeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "writ_raft_apply_seconds", Help: "Time from proposing an entry to its being applied here.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		forwardBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "writ_forward_batch_submissions", Help: "Submissions per batch this follower forwarded to the leader.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 9),
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "writ_admissions_in_flight", Help: "Admissions and approvals being processed (the queue depth).",
		}),
		submitSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "writ_submission_seconds", Help: "Time this server took to answer a submission, from its handler's start, by answer (admitted, overloaded, other).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 18),
		}, []string{"answer"}),
		handshakesShed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "writ_api_connections_shed_total", Help: "API connections closed before their TLS handshake: too many were waiting for one.",
		}),
		leaderChange: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "writ_leader_changes_total", Help: "Times this server saw the leader change.",
		}),
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "writ_node_sessions", Help: "Node sessions this server holds.",
		}),
		sessionRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "writ_node_sessions_refused_total", Help: "Node connections refused before a stream was served, by reason.",
		}, []string{"reason"}),
		dispatchesSent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "writ_dispatches_sent_total", Help: "Signed dispatches pushed to nodes by this server.",
		}),
		nodeReports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "writ_node_reports_refused_total", Help: "Node reports not recorded: unreadable dispatches, results that do not verify or match no dispatch.",
		}, []string{"code"}),
		rechecks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "writ_authorization_rechecks_total", Help: "Admissions and approvals refused by the FSM because keys, tools or the policy set changed after their check.",
		}),
	}
	raftIndex := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "writ_raft_applied_index", Help: "The last Raft index applied on this server.",
	}, func() float64 { return float64(node.AppliedIndex()) })
	queued := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "writ_intents_queued", Help: "Intents queued for a node (waiting for a slot or for a node to connect).",
	}, func() float64 { return float64(queue()) })
	m.reg.MustRegister(queued, m.admissions, m.refused, m.authFailures, m.failuresLimited, m.applySeconds, m.groupSize, m.forwardBatch, m.inFlight, m.submitSeconds, m.handshakesShed, m.leaderChange, raftIndex,
		m.sessions, m.sessionRefused, m.dispatchesSent, m.nodeReports, m.rechecks,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
