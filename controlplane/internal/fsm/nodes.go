package fsm

import (
	"crypto/subtle"
	"maps"
	"slices"
	"time"

	"github.com/writhq/writ/protocol"
)

// Node statuses. Only a ready node is given dispatches; a revoked node never
// comes back.
const (
	NodeReady    = "ready"
	NodeDown     = "down"
	NodeDraining = "draining"
	NodeRevoked  = "revoked"
)

// Node is an enrolled node agent.
type Node struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Labels are what intents and tools select the node by: its join
	// token's (TokenLabels, given by an admin), and those its owner set on
	// the node for keys the token does not name.
	Labels      map[string]string `json:"labels"`
	TokenLabels map[string]string `json:"token_labels"`
	// Public is the node's Ed25519 key, which signs its results.
	Public []byte `json:"public"`
	Status string `json:"status"`
	// What the node said of itself when its session began.
	OS          string            `json:"os"`
	Arch        string            `json:"arch"`
	Version     string            `json:"version"`
	Tiers       []string          `json:"tiers"`
	Tools       map[string]string `json:"tools"` // name → manifest hash
	Concurrency int               `json:"concurrency"`
	// Server holds the node's session (the last one to say so); Session
	// names that session, so that the end of an older one changes nothing.
	Server     string    `json:"server"`
	Session    string    `json:"session,omitzero"`
	InFlight   int       `json:"in_flight"`
	EnrolledAt time.Time `json:"enrolled_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// JoinToken is a one-time enrollment token. Only the hash of its secret is
// kept; the labels become the node's.
type JoinToken struct {
	ID        string            `json:"id"`
	Hash      string            `json:"hash"`
	Labels    map[string]string `json:"labels"`
	ExpiresAt time.Time         `json:"expires_at"`
}

// Node and enrollment commands.
const (
	MsgPutJoinToken MsgType = 32
	MsgEnroll       MsgType = 33
	MsgNodeSession  MsgType = 34
	MsgNodeStatus   MsgType = 35
	MsgResult       MsgType = 36
)

// PutJoinToken stores a join token (its secret's hash).
type PutJoinToken = JoinToken

// Enroll consumes a join token and registers a node. The leader checked the
// token's secret against Hash before proposing; the FSM checks it again, so a
// token is used at most once whatever the leader saw.
type Enroll struct {
	At        time.Time `json:"at"`
	TokenID   string    `json:"token_id"`
	TokenHash string    `json:"token_hash"`
	Node      string    `json:"node"`
	Name      string    `json:"name"`
	Public    []byte    `json:"public"`
}

// NodeSession records that a server holds (or lost) a node's session, and
// what the node said in its hello.
type NodeSession struct {
	At        time.Time `json:"at"`
	Node      string    `json:"node"`
	Server    string    `json:"server"`
	Connected bool      `json:"connected"`
	// Session names the session: random, made by its server when it
	// began. The end of a session other than the node's current one is
	// ignored; empty (older entries) matches any session of Server.
	Session string `json:"session,omitzero"`
	// Set when Connected.
	OS          string            `json:"os,omitzero"`
	Arch        string            `json:"arch,omitzero"`
	Version     string            `json:"version,omitzero"`
	Tiers       []string          `json:"tiers,omitzero"`
	Tools       map[string]string `json:"tools,omitzero"`
	Concurrency int               `json:"concurrency,omitzero"`
	Labels      map[string]string `json:"labels,omitzero"`
}

// NodeStatus is an admin's drain, undrain or revoke.
type NodeStatus struct {
	At     time.Time `json:"at"`
	Node   string    `json:"node"`
	Status string    `json:"status"`
}

// NodeWatch is the watch key of a node: woken when it is given a dispatch or
// its record changes.
func NodeWatch(id string) string { return nodeWatchPrefix + id }

const nodeWatchPrefix = "\x00node:"

func (f *FSM) applyEnroll(c *Enroll) Result {
	now := f.advance(c.At)
	s := f.state
	tok := s.JoinTokens[c.TokenID]
	if tok == nil || subtle.ConstantTimeCompare([]byte(tok.Hash), []byte(c.TokenHash)) != 1 {
		return refuse(protocol.CodeInvalidToken, "the join token is not valid")
	}
	if !tok.ExpiresAt.After(now) {
		return refuse(protocol.CodeInvalidToken, "the join token expired at %s", protocol.FormatTime(tok.ExpiresAt))
	}
	if _, ok := s.Nodes[c.Node]; ok {
		return refuse(protocol.CodeIdempotencyConflict, "node id %q is taken", c.Node)
	}
	delete(s.JoinTokens, c.TokenID)
	s.Nodes[c.Node] = &Node{
		ID: c.Node, Name: c.Name, Labels: maps.Clone(tok.Labels), TokenLabels: tok.Labels, Public: c.Public, Status: NodeDown,
		Tools: map[string]string{}, EnrolledAt: now, UpdatedAt: now,
	}
	f.idx.names[c.Name] = append(f.idx.names[c.Name], c.Node)
	f.scheduler().reschedule(s.Nodes[c.Node])
	return Result{}
}

func (f *FSM) applyNodeSession(index uint64, c *NodeSession) (Result, []string) {
	now := f.advance(c.At)
	n := f.state.Nodes[c.Node]
	switch {
	case n == nil:
		return refuse(protocol.CodeNotFound, "no node %q", c.Node), nil
	case n.Status == NodeRevoked:
		return refuse(protocol.CodeNodeRevoked, "node %q is revoked", c.Node), nil
	}
	if !c.Connected {
		// A server that lost the session says so only for itself and that
		// session: the node may already be connected to another server, or
		// again to this one.
		if n.Server != c.Server || n.Status == NodeDown || (c.Session != "" && c.Session != n.Session) {
			return Result{}, nil
		}
		if n.Status == NodeReady {
			n.Status = NodeDown
		}
		n.Server, n.Session, n.UpdatedAt = "", "", now
		f.scheduler().reschedule(n)
		// Intents queued for it alone begin their wait for a node.
		return Result{}, append([]string{NodeWatch(n.ID)}, f.scheduler().drainQueue(index)...)
	}
	n.OS, n.Arch, n.Version, n.Concurrency = c.OS, c.Arch, c.Version, max(c.Concurrency, 1)
	n.Tiers = slices.Sorted(slices.Values(c.Tiers))
	n.Tools = c.Tools
	if n.Tools == nil {
		n.Tools = map[string]string{}
	}
	n.Labels = maps.Clone(c.Labels)
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	maps.Copy(n.Labels, n.TokenLabels)
	n.Server, n.Session, n.UpdatedAt = c.Server, c.Session, now
	if n.Status == NodeDown {
		n.Status = NodeReady
	}
	f.scheduler().reschedule(n)
	return Result{}, append([]string{NodeWatch(n.ID)}, f.scheduler().drainQueue(index)...)
}

func (f *FSM) applyNodeStatus(index uint64, c *NodeStatus) (Result, []string) {
	now := f.advance(c.At)
	n := f.state.Nodes[c.Node]
	if n == nil {
		return refuse(protocol.CodeNotFound, "no node %q", c.Node), nil
	}
	if n.Status == NodeRevoked {
		return refuse(protocol.CodeNodeRevoked, "node %q is revoked", c.Node), nil
	}
	switch c.Status {
	case NodeRevoked, NodeDraining:
		n.Status = c.Status
	case NodeReady: // undrain: ready if connected
		if n.Status == NodeDraining {
			n.Status = NodeDown
			if n.Server != "" {
				n.Status = NodeReady
			}
		}
	default:
		return refuse(protocol.CodeMalformed, "status %q is not ready, draining or revoked", c.Status), nil
	}
	n.UpdatedAt = now
	f.scheduler().reschedule(n)
	// Ready: queued intents may go to it; else those that only it could
	// run begin their wait for a node, or end if it is revoked.
	return Result{}, append([]string{NodeWatch(n.ID)}, f.scheduler().drainQueue(index)...)
}
