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

// relayBody is one relayed command, or, of type group (fsm.MsgGroup),
// several that the leader proposes in one entry (relayableTogether).
type relayBody struct {
	Type     uint8          `json:"type"`
	Cmd      jsontext.Value `json:"cmd,omitempty"`
	Together []relayBody    `json:"together,omitempty"`
}

// relayAnswer is the result of a relayed command, or the results of those
// relayed together, in their order.
type relayAnswer struct {
	Result   fsm.Result   `json:"result"`
	Together []fsm.Result `json:"together,omitempty"`
}

// relayableTogether are the commands a follower may relay in one group: a
// run's output and its result (session.result), at most two.
var relayableTogether = map[fsm.MsgType]bool{fsm.MsgPutOutput: true, fsm.MsgResult: true}

const maxRelayedTogether = 2

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
	res, err := s.applyAnywhereTogether(ctx, raftnode.Command{Type: t, Cmd: cmd})
	if err != nil {
		return fsm.Result{}, err
	}
	return res[0], nil
}

// applyAnywhereTogether is applyAnywhere for commands that must share one
// Raft entry (raftnode.ProposeTogether): a run's output and its result, one
// commit instead of two in series. A leader that does not take them together
// (a server of an older version, during an upgrade) is sent them one by one.
func (s *Server) applyAnywhereTogether(ctx context.Context, cmds ...raftnode.Command) ([]fsm.Result, error) {
	var body []byte // the relay's body, made the first time one is sent
	deadline := time.Now().Add(relayRetry)
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		res, retry, err := s.relayOnce(ctx, cmds, &body)
		if errors.Is(err, errNotTogether) {
			return s.applyAnywhereOneByOne(ctx, cmds)
		}
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

// applyAnywhereOneByOne relays commands one after the other, stopping at the
// first not committed.
func (s *Server) applyAnywhereOneByOne(ctx context.Context, cmds []raftnode.Command) ([]fsm.Result, error) {
	out := make([]fsm.Result, 0, len(cmds))
	for _, c := range cmds {
		res, err := s.applyAnywhereTogether(ctx, c)
		if err != nil {
			return nil, err
		}
		out = append(out, res[0])
	}
	return out, nil
}

// relayRetry is how long applyAnywhere keeps trying while leadership moves.
const relayRetry = 5 * time.Second

// errNotTogether is a leader refusing commands relayed together.
var errNotTogether = errors.New("controlplane: the leader does not take relayed commands together")

// relayOnce proposes cmds here when this server leads, or relays them to the
// leader: one command as its relayBody, several as a relayBody of type
// group (fsm.MsgGroup) listing them in Together.
func (s *Server) relayOnce(ctx context.Context, cmds []raftnode.Command, body *[]byte) (res []fsm.Result, retry bool, err error) {
	if s.node.Raft.State() == raft.Leader || s.cluster == nil {
		res, err = s.applyTogether(ctx, cmds)
		return res, errors.Is(err, raftnode.ErrNotLeader), err
	}
	_, leader := s.node.Raft.LeaderWithID()
	m, ok := s.cluster.g.member(string(leader))
	if leader == "" || !ok {
		return nil, true, raftnode.ErrNotLeader
	}
	if *body == nil {
		rb := relayBody{Type: uint8(fsm.MsgGroup)}
		for _, c := range cmds {
			raw, err := jsonx.Marshal(c.Cmd)
			if err != nil {
				return nil, false, err
			}
			rb.Together = append(rb.Together, relayBody{Type: uint8(c.Type), Cmd: raw})
		}
		if len(cmds) == 1 {
			rb = rb.Together[0]
		}
		*body, _ = jsonx.Marshal(rb)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+m.API+"/v1/internal/apply", bytes.NewReader(*body))
	if err != nil {
		return nil, false, err
	}
	resp, err := s.cluster.http.Do(req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusBadRequest && len(cmds) > 1 {
		return nil, false, errNotTogether
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode == http.StatusServiceUnavailable,
			fmt.Errorf("controlplane: the leader refused a relayed %s: HTTP %d: %s", cmds[0].Type, resp.StatusCode, b)
	}
	var a relayAnswer
	if err := jsonx.UnmarshalLenient(b, &a); err != nil {
		return nil, false, err
	}
	if len(cmds) == 1 {
		return []fsm.Result{a.Result}, false, nil
	}
	if len(a.Together) != len(cmds) {
		return nil, false, fmt.Errorf("controlplane: the leader answered %d results for %d commands relayed together", len(a.Together), len(cmds))
	}
	return a.Together, false, nil
}

// applyTogether proposes cmds here: one as apply does, several in one entry.
func (s *Server) applyTogether(ctx context.Context, cmds []raftnode.Command) ([]fsm.Result, error) {
	if len(cmds) == 1 {
		res, err := s.apply(ctx, cmds[0].Type, cmds[0].Cmd)
		if err != nil {
			return nil, err
		}
		return []fsm.Result{res}, nil
	}
	start := time.Now()
	res, _, err := s.node.ProposeTogether(ctx, cmds...)
	if err == nil {
		s.metrics.applySeconds.Observe(time.Since(start).Seconds())
	}
	return res, err
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
	if err := jsonx.UnmarshalLenient(body, &rb); err != nil {
		writeError(w, protocol.CodeMalformed, "not a relayable command")
		return
	}
	if fsm.MsgType(rb.Type) == fsm.MsgGroup {
		ep.relayTogether(w, r, rb.Together)
		return
	}
	c, refused := ep.relayedOne(rb, relayable)
	if refused != "" {
		writeError(w, protocol.CodeMalformed, refused)
		return
	}
	res, err := ep.srv.apply(r.Context(), c.Type, c.Cmd)
	if err != nil {
		writeRelayError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, relayAnswer{Result: res})
}

// relayTogether proposes the commands a follower relayed together in one
// entry: what sessionread.go sends, a run's output and then its result, of
// one dispatch; anything else is refused whole.
func (ep internalAPI) relayTogether(w http.ResponseWriter, r *http.Request, rbs []relayBody) {
	if len(rbs) < 2 || len(rbs) > maxRelayedTogether {
		writeError(w, protocol.CodeMalformed, "not a relayable command")
		return
	}
	cmds := make([]raftnode.Command, len(rbs))
	for i, rb := range rbs {
		var refused string
		if cmds[i], refused = ep.relayedOne(rb, relayableTogether); refused != "" {
			writeError(w, protocol.CodeMalformed, refused)
			return
		}
	}
	if !outputAndResult(cmds) {
		writeError(w, protocol.CodeMalformed, "not a run's output and result")
		return
	}
	res, err := ep.srv.applyTogether(r.Context(), cmds)
	if err != nil {
		writeRelayError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, relayAnswer{Result: res[0], Together: res})
}

// outputAndResult reports whether cmds are one dispatch's output and then
// its result, from one node for one intent.
func outputAndResult(cmds []raftnode.Command) bool {
	if len(cmds) != 2 {
		return false
	}
	o, ok1 := cmds[0].Cmd.(*fsm.PutOutput)
	r, ok2 := cmds[1].Cmd.(*fsm.RecordResult)
	return ok1 && ok2 && o.DispatchID == r.DispatchID && o.IntentID == r.IntentID && o.Node == r.Node
}

// relayedCommand decodes one relayed command. The leader decides time: the
// relaying server's clock is replaced.
// relayedOne checks one relayed command against allowed and decodes it;
// refused is the refusal's message when it cannot be taken.
func (ep internalAPI) relayedOne(rb relayBody, allowed map[fsm.MsgType]bool) (c raftnode.Command, refused string) {
	if !allowed[fsm.MsgType(rb.Type)] || rb.Together != nil {
		return c, "not a relayable command"
	}
	cmd, err := ep.relayedCommand(rb)
	if err != nil {
		return c, "the command does not decode"
	}
	return raftnode.Command{Type: fsm.MsgType(rb.Type), Cmd: cmd}, ""
}

func (ep internalAPI) relayedCommand(rb relayBody) (any, error) {
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
	return cmd, err
}

func writeRelayError(w http.ResponseWriter, err error) {
	if errors.Is(err, raftnode.ErrNotLeader) {
		writeError(w, protocol.CodeNoLeader, "not the leader")
		return
	}
	writeError(w, protocol.CodeInternal, "not committed")
}
