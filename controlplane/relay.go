package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/hashicorp/raft"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/raftnode"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// Node sessions end on any server; what they record (a session began or
// ended, a result) must be proposed by the leader. A follower relays the
// command over the servers' mutual TLS to the leader's internal endpoint,
// which accepts only these commands and only from a server certificate.
var relayable = map[fsm.MsgType]bool{fsm.MsgNodeSession: true, fsm.MsgResult: true, fsm.MsgPutOutput: true, fsm.MsgAbandon: true,
	// The dashboard's sessions and node actions (dashboard.go), taken by any server.
	fsm.MsgOpenSession: true, fsm.MsgCloseSession: true, fsm.MsgNodeStatus: true,
	// The dashboard's admin changes (node actions, locks), on the record;
	// relayedAdminChange takes only those.
	fsm.MsgAdmin: true}

type relayBody struct {
	Type uint8          `json:"type"`
	Cmd  jsontext.Value `json:"cmd"`
}

type relayAnswer struct {
	Result fsm.Result `json:"result"`
}

// internalAPI is the servers' own area of the API, refused to anyone but a
// server of this cluster: a node session's command relayed to the leader,
// a batch of forwarded submissions, and a server's node heartbeats. Its
// handlers are in relay.go, forwardbatch.go and heartbeats.go.
type internalAPI struct{ srv *Server }

// routes registers the internal area.
func (ep internalAPI) routes(mux *routeMux) {
	mux.HandleFunc("POST /v1/internal/apply", ep.handleRelay)
	mux.HandleFunc("POST "+batchPath, ep.handleSubmitBatch)
	mux.HandleFunc("GET /v1/internal/heartbeats", ep.handleHeartbeats)
}

// applyAnywhere proposes a command of a node session: here when this server
// leads, through the leader otherwise. While leadership moves (no leader
// known, or the server asked has just lost it: 503) it tries again for up to
// relayRetry; every relayable command is safe to propose twice (a repeated
// result or session record changes nothing).
func (s *Server) applyAnywhere(ctx context.Context, t fsm.MsgType, cmd any) (fsm.Result, error) {
	var body []byte // the relay's body, made the first time one is sent
	deadline := time.Now().Add(relayRetry)
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		res, retry, err := s.relayOnce(ctx, t, cmd, &body)
		if !retry || time.Now().Add(pause).After(deadline) {
			return res, err
		}
		select {
		case <-ctx.Done():
			return res, err
		case <-time.After(pause):
		}
	}
}

// relayRetry is how long applyAnywhere keeps trying while leadership moves.
const relayRetry = 5 * time.Second

func (s *Server) relayOnce(ctx context.Context, t fsm.MsgType, cmd any, body *[]byte) (res fsm.Result, retry bool, err error) {
	if s.node.Raft.State() == raft.Leader || s.cluster == nil {
		res, err = s.apply(ctx, t, cmd)
		return res, errors.Is(err, raftnode.ErrNotLeader), err
	}
	_, leader := s.node.Raft.LeaderWithID()
	m, ok := s.cluster.g.member(string(leader))
	if leader == "" || !ok {
		return fsm.Result{}, true, raftnode.ErrNotLeader
	}
	if *body == nil {
		raw, err := jsonx.Marshal(cmd)
		if err != nil {
			return fsm.Result{}, false, err
		}
		*body, _ = jsonx.Marshal(relayBody{Type: uint8(t), Cmd: raw})
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+m.API+"/v1/internal/apply", bytes.NewReader(*body))
	if err != nil {
		return fsm.Result{}, false, err
	}
	resp, err := s.cluster.http.Do(req)
	if err != nil {
		return fsm.Result{}, false, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fsm.Result{}, resp.StatusCode == http.StatusServiceUnavailable,
			fmt.Errorf("controlplane: the leader refused a relayed %s: HTTP %d: %s", t, resp.StatusCode, b)
	}
	var a relayAnswer
	if err := jsonx.UnmarshalLenient(b, &a); err != nil {
		return fsm.Result{}, false, err
	}
	return a.Result, false, nil
}

func (ep internalAPI) handleRelay(w http.ResponseWriter, r *http.Request) {
	// A relay comes straight from a server; a request a follower forwarded
	// for a client (which names that client) never is one.
	if !fromServer(r) || r.Header.Get(headerForwardedFor) != "" {
		writeError(w, protocol.CodeUnauthorized, "only a server of this cluster may relay commands")
		return
	}
	body, aerr := readBody(w, r, 8<<20)
	if aerr != nil {
		writeError(w, aerr.code, aerr.msg)
		return
	}
	var rb relayBody
	if err := jsonx.UnmarshalLenient(body, &rb); err != nil || !relayable[fsm.MsgType(rb.Type)] {
		writeError(w, protocol.CodeMalformed, "not a relayable command")
		return
	}
	// The leader decides time: the relaying server's clock is replaced.
	var cmd any
	var err error
	switch fsm.MsgType(rb.Type) {
	case fsm.MsgNodeSession:
		c := &fsm.NodeSession{}
		err = jsonx.UnmarshalLenient(rb.Cmd, c)
		c.At, cmd = ep.srv.now(), c
	case fsm.MsgResult:
		c := &fsm.RecordResult{}
		err = jsonx.UnmarshalLenient(rb.Cmd, c)
		c.At, cmd = ep.srv.now(), c
	case fsm.MsgAbandon:
		c := &fsm.Abandon{}
		err = jsonx.UnmarshalLenient(rb.Cmd, c)
		c.At, cmd = ep.srv.now(), c
	case fsm.MsgPutOutput:
		c := &fsm.PutOutput{}
		err = jsonx.UnmarshalLenient(rb.Cmd, c)
		c.At, cmd = ep.srv.now(), c
	default:
		cmd, err = relayedDashboardCommand(ep.srv, fsm.MsgType(rb.Type), rb.Cmd)
	}
	if err != nil {
		writeError(w, protocol.CodeMalformed, "the command does not decode")
		return
	}
	res, err := ep.srv.apply(r.Context(), fsm.MsgType(rb.Type), cmd)
	if err != nil {
		if errors.Is(err, raftnode.ErrNotLeader) {
			writeError(w, protocol.CodeNoLeader, "not the leader")
			return
		}
		writeError(w, protocol.CodeInternal, "not committed")
		return
	}
	writeJSON(w, http.StatusOK, relayAnswer{Result: res})
}
