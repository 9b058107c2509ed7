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
func (ep internalAPI) localBeats() map[string]string {
	out := map[string]string{}
	if ep.srv.fleet == nil {
		return out
	}
	for _, ss := range ep.srv.fleet.all() {
		ss.mu.Lock()
		out[ss.node] = protocol.FormatTime(ss.lastSeen)
		ss.mu.Unlock()
	}
	return out
}

func (ep internalAPI) handleHeartbeats(w http.ResponseWriter, r *http.Request) {
	if !fromServer(r) {
		writeError(w, protocol.CodeUnauthorized, "only a server of this cluster may ask")
		return
	}
	writeJSON(w, http.StatusOK, heartbeatsBody{Heartbeats: ep.localBeats()})
}

// lastHeartbeat is the node's last heartbeat as known to the server holding
// its session, or "" when that cannot be learnt.
func (ep nodesAPI) lastHeartbeat(node, server string) string {
	if ep.srv.fleet != nil {
		if ss := ep.srv.fleet.session(node); ss != nil {
			ss.mu.Lock()
			defer ss.mu.Unlock()
			return protocol.FormatTime(ss.lastSeen)
		}
	}
	if server == "" || server == ep.srv.cfg.ID || ep.srv.cluster == nil {
		return ""
	}
	return ep.beatsOf(server)[node]
}

// beatsOf asks server for its sessions' heartbeats, at most once per
// beatsFresh; concurrent askers share one request.
func (ep nodesAPI) beatsOf(server string) map[string]string {
	rb := &ep.srv.remote
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
	a.beats = ep.fetchBeats(server)
	if a.beats == nil { // a failed ask is not kept: the next one asks again
		rb.mu.Lock()
		a.at = time.Time{}
		rb.mu.Unlock()
	}
	return a.beats
}

func (ep nodesAPI) fetchBeats(server string) map[string]string {
	m, ok := ep.srv.cluster.g.member(server)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+m.API+"/v1/internal/heartbeats", nil)
	if err != nil {
		return nil
	}
	resp, err := ep.srv.cluster.http.Do(req)
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
