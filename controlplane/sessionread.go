package controlplane

import (
	"context"
	"crypto/ed25519"
	"time"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/raftnode"
	"github.com/writhq/writ/protocol"
)

// read takes the node's frames until the session ends. A frame that breaks
// the protocol ends the session; a result that fails verification is
// answered with an error ack and counted, never recorded.
func (ss *session) read() {
	for {
		f, err := protocol.ReadFrame(ss.stream)
		if err != nil {
			return
		}
		ss.mu.Lock()
		ss.lastSeen = time.Now()
		ss.mu.Unlock()
		switch f.Type {
		case protocol.FrameResult:
			var rf protocol.ResultFrame
			if err := f.DecodeBody(&rf); err != nil {
				ss.bye(protocol.ErrorBody{Code: protocol.CodeMalformed, Message: err.Error()}, closeProtocol)
				return
			}
			go ss.result(rf.Result, rf.Output)
		case protocol.FrameHeartbeat:
			var hb protocol.Heartbeat
			if f.DecodeBody(&hb) == nil {
				ss.mu.Lock()
				ss.inFlight = hb.InFlight
				ss.mu.Unlock()
			}
		case protocol.FrameReject:
			var rj protocol.Reject
			_ = f.DecodeBody(&rj)
			ss.srv.metrics.nodeReports.WithLabelValues("reject").Inc()
			ss.log().Warn("node could not read a dispatch", "code", rj.Error.Code, "message", rj.Error.Message)
		case protocol.FrameRenew:
			var rn protocol.Renew
			if err := f.DecodeBody(&rn); err != nil {
				ss.bye(protocol.ErrorBody{Code: protocol.CodeMalformed, Message: err.Error()}, closeProtocol)
				return
			}
			go ss.renew(rn.CSR)
		default:
			ss.bye(protocol.ErrorBody{Code: protocol.CodeMalformed, Message: "unexpected frame " + f.Type}, closeProtocol)
			return
		}
	}
}

// nodeKeys finds a node's result-signing key: a node signs with key id equal
// to its node id.
type nodeKeys struct{ f fsm.Reader }

func (k nodeKeys) SignerKey(id string) (ed25519.PublicKey, bool) {
	pub, ok := k.f.NodeKey(id)
	if !ok || len(pub) != ed25519.PublicKeySize {
		return nil, false
	}
	return ed25519.PublicKey(pub), true
}

// result verifies a node's signed result and the captured output sent beside
// it, and records both through Raft in one entry: the output first (outside
// the receipt), then the result. The node gets an ack once the result is committed, or an
// error ack when it never can be. Without either (no leader, a timeout) the
// node keeps it and sends it again. Only writ.result/v2 is taken: a v1 would
// put the output in the receipt, which the ledger never holds.
func (ss *session) result(raw, output []byte) {
	s := ss.srv
	res, canon, err := s.verifier.VerifyResultCanonical(raw, nodeKeys{s.reads})
	switch {
	case err != nil:
	case res.Node != ss.node || res.KeyID != ss.node:
		err = &protocol.Error{Code: protocol.CodeWrongNode, Message: "a result must be signed by the node that sends it"}
	case res.Version() != 2:
		err = &protocol.Error{Code: protocol.CodeMalformed, Message: "a node must sign " + protocol.ResultTypeV2 + ": a receipt never carries output"}
	default:
		err = res.CheckCaptured(output)
	}
	if err != nil {
		s.metrics.nodeReports.WithLabelValues("bad_result").Inc()
		ss.log().Warn("node sent a result that does not verify", "err", err)
		// Resending cannot help: tell the node to drop it, when it can be named.
		if d, derr := protocol.DecodeResult(raw, 0); derr == nil {
			ss.ack(protocol.Ack{DispatchID: d.DispatchID, Error: &protocol.ErrorBody{Code: protocol.CodeOf(err), Message: err.Error()}})
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The output and the result share one Raft entry, the output first: one
	// commit (and, on a follower, one relay) instead of two in series, and
	// neither is recorded without the other. A result this replica already
	// holds (a node resending after a lost ack) needs no output command: the
	// FSM would keep the one it has.
	cmds := make([]raftnode.Command, 0, 2)
	if d, ok := s.reads.Dispatch(res.DispatchID); len(output) > 0 && (!ok || d.Result == nil) {
		cmds = append(cmds, raftnode.Command{Type: fsm.MsgPutOutput, Cmd: fsm.PutOutput{At: s.now(), DispatchID: res.DispatchID,
			IntentID: res.IntentID, Node: res.Node, Hash: res.CapturedHash, Output: output}})
	}
	cmds = append(cmds, raftnode.Command{Type: fsm.MsgResult, Cmd: fsm.RecordResult{
		At: s.now(), DispatchID: res.DispatchID, IntentID: res.IntentID, Node: res.Node,
		Status: res.Status, Error: res.Error, Result: canon,
	}})
	results, err := s.applyAnywhereTogether(ctx, cmds...)
	if err != nil {
		ss.log().Warn("result not committed; the node will resend it", "dispatch", res.DispatchID, "err", err)
		return
	}
	if o := results[0]; len(results) == 2 && o.Err != nil {
		ss.log().Warn("node output not kept", "dispatch", res.DispatchID, "code", o.Err.Code)
	}
	out := results[len(results)-1]
	if out.Err != nil {
		// A report on a dispatch this cluster never made (a forged one the
		// node refused) or one already decided otherwise.
		s.metrics.nodeReports.WithLabelValues(string(out.Err.Code)).Inc()
		ss.log().Warn("node result not recorded", "dispatch", res.DispatchID, "status", res.Status, "code", out.Err.Code)
		ss.ack(protocol.Ack{DispatchID: res.DispatchID, Error: out.Err})
		return
	}
	a := protocol.Ack{DispatchID: res.DispatchID}
	state := ""
	if in, ok := s.reads.Intent(res.IntentID); ok {
		a.Receipt = in.Receipt
		if in.SupersededBy != nil {
			a.Receipt = in.SupersededBy
		}
		state = in.State
	}
	// One line per result, as per admission and approval: names and
	// statuses, never output or the tool's error text.
	attrs := []any{"intent_id", res.IntentID, "dispatch", res.DispatchID, "node", res.Node, "status", res.Status, "state", state}
	if a.Receipt != nil {
		attrs = append(attrs, "receipt", *a.Receipt)
	}
	ss.log().Info("result recorded", attrs...)
	ss.ack(a)
}

func (ss *session) ack(a protocol.Ack) {
	if err := ss.write(protocol.FrameAck, a); err != nil {
		ss.close("write failed")
	}
}

// renew issues a new client certificate for the node's new TLS key.
func (ss *session) renew(der []byte) {
	csr, err := certificateRequest(der)
	var chain [][]byte
	if err == nil {
		chain, err = ss.srv.fleet.issueNode(ss.node, csr, ss.srv.cfg.NodeCertValidity)
	}
	if err != nil {
		ss.log().Warn("certificate renewal refused", "err", err)
		ss.bye(protocol.ErrorBody{Code: protocol.CodeMalformed, Message: err.Error()}, closeProtocol)
		return
	}
	if err := ss.write(protocol.FrameCertificate, protocol.Certificate{Chain: chain}); err != nil {
		ss.close("write failed")
	}
}
