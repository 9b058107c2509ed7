package controlplane

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// A node's heartbeats reach only the server that holds its session, and are
// not worth a Raft entry each. A server asked about a node whose session is
// elsewhere asks that server, over the servers' mutual TLS, for the last
// heartbeat of every session it holds, and keeps the answer briefly.

// beatsFresh is how long another server's answer is reused.
const beatsFresh = 2 * time.Second

type remoteBeats struct {
	mu   sync.Mutex
	byID map[string]*beatsAnswer // by server id
}

type beatsAnswer struct {
	at    time.Time
	beats map[string]string // node id → last heartbeat
	ready chan struct{}     // closed once beats is set
}

type heartbeatsBody struct {
	Heartbeats map[string]string `json:"heartbeats"`
}

// localBeats is the last heartbeat of each session this server holds.
func (s *Server) localBeats() map[string]string {
	out := map[string]string{}
	if s.fleet == nil {
		return out
	}
	for _, ss := range s.fleet.all() {
		ss.mu.Lock()
		out[ss.node] = protocol.FormatTime(ss.lastSeen)
		ss.mu.Unlock()
	}
	return out
}

func (s *Server) handleHeartbeats(w http.ResponseWriter, r *http.Request) {
	if !fromServer(r) {
		writeError(w, protocol.CodeUnauthorized, "only a server of this cluster may ask")
		return
	}
	writeJSON(w, http.StatusOK, heartbeatsBody{Heartbeats: s.localBeats()})
}

// lastHeartbeat is the node's last heartbeat as known to the server holding
// its session, or "" when that cannot be learnt.
func (s *Server) lastHeartbeat(node, server string) string {
	if s.fleet != nil {
		if ss := s.fleet.session(node); ss != nil {
			ss.mu.Lock()
			defer ss.mu.Unlock()
			return protocol.FormatTime(ss.lastSeen)
		}
	}
	if server == "" || server == s.cfg.ID || s.cluster == nil {
		return ""
	}
	return s.beatsOf(server)[node]
}

// beatsOf asks server for its sessions' heartbeats, at most once per
// beatsFresh; concurrent askers share one request.
func (s *Server) beatsOf(server string) map[string]string {
	rb := &s.remote
	rb.mu.Lock()
	if rb.byID == nil {
		rb.byID = map[string]*beatsAnswer{}
	}
	a := rb.byID[server]
	if a != nil && time.Since(a.at) < beatsFresh {
		rb.mu.Unlock()
		<-a.ready
		return a.beats
	}
	a = &beatsAnswer{at: time.Now(), ready: make(chan struct{})}
	rb.byID[server] = a
	rb.mu.Unlock()
	defer close(a.ready)
	a.beats = s.fetchBeats(server)
	if a.beats == nil { // a failed ask is not kept: the next one asks again
		rb.mu.Lock()
		a.at = time.Time{}
		rb.mu.Unlock()
	}
	return a.beats
}

func (s *Server) fetchBeats(server string) map[string]string {
	m, ok := s.cluster.g.member(server)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+m.API+"/v1/internal/heartbeats", nil)
	if err != nil {
		return nil
	}
	resp, err := s.cluster.http.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	var b heartbeatsBody
	if json.UnmarshalRead(io.LimitReader(resp.Body, 16<<20), &b, jsonx.Lenient) != nil {
		return nil
	}
	return b.Heartbeats
}
