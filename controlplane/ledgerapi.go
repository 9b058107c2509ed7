package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/ledger"
	"github.com/writhq/writ/protocol"
)

// ledgerAPI is the ledger area of the API: a receipt and its inclusion
// proof, the signed checkpoint, consistency proofs between checkpoints, and
// the admin entries. Its handlers are in ledgerapi.go and adminlogapi.go.
type ledgerAPI struct{ srv *Server }

// routes registers the ledger area.
func (ep ledgerAPI) routes(mux *routeMux) {
	mux.HandleFunc("GET /v1/receipts/{index}", ep.handleReceipt)
	mux.HandleFunc("GET /v1/ledger/checkpoint", ep.handleCheckpoint)
	mux.HandleFunc("GET /v1/ledger/consistency", ep.handleConsistency)
	mux.HandleFunc("GET /v1/ledger/admin", ep.handleAdminEntries)
}

func (ep ledgerAPI) ledgerError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ledger.ErrIndexOutOfRange), errors.Is(err, ledger.ErrNotFound):
		writeError(w, protocol.CodeNotFound, err.Error())
	default:
		// A corrupt or broken log refuses to serve; say so in the server's log.
		ep.srv.log.Error("ledger", "err", err)
		writeError(w, protocol.CodeInternal, "the receipt log cannot serve this")
	}
}

// handleReceipt proves the receipt at an index. Anyone gets the leaf's hash
// and its inclusion proof (publicReceipt); the receipt itself goes only to
// those entitled to its tenant's content: a read signed with an orchestrator
// key of that tenant, an auditor token of that tenant or of all (with the
// outputs grant when the receipt carries a tool's output), an admin token, or
// a dashboard session that may view the tenant. A signed read or an auditor
// of another tenant is answered not_found, as for an index that does not
// exist; a dashboard session sees other tenants' leaves as hashes. An admin
// entry (writ.admin/v1) goes only to the admin, an admin's session and the
// auditors who see its tenant (an auditor of all, for one that names no
// tenant); anyone else gets its hash.
func (ep ledgerAPI) handleReceipt(w http.ResponseWriter, r *http.Request) {
	c, aerr := ep.srv.auth().callerOf(r)
	if aerr != nil {
		ep.srv.refuse(w, r, aerr)
		return
	}
	i, err := strconv.ParseInt(r.PathValue("index"), 10, 64)
	if err != nil || i < 0 {
		writeError(w, protocol.CodeMalformed, "index must be a non-negative integer")
		return
	}
	rp, err := ep.srv.ledger.ProveReceipt(i)
	if err != nil {
		ep.ledgerError(w, err)
		return
	}
	var head receiptHead
	if c.kind != callerNone {
		if err := json.Unmarshal(rp.Receipt, &head); err != nil {
			ep.ledgerError(w, fmt.Errorf("receipt %d does not decode: %w", i, err))
			return
		}
	}
	if head.Type == protocol.AdminEntryType {
		ep.adminEntry(w, c, head, rp)
		return
	}
	switch c.kind {
	case callerAdmin:
	case callerTenant:
		if !c.sees(head.Tenant) {
			writeError(w, protocol.CodeNotFound, "no receipt "+strconv.FormatInt(i, 10))
			return
		}
	case callerAuditor:
		if !c.sees(head.Tenant) {
			writeError(w, protocol.CodeNotFound, "no receipt "+strconv.FormatInt(i, 10))
			return
		}
		if head.carriesOutput() && !c.readsOutputOf(head.Tenant) {
			ep.publicReceipt(w, rp)
			return
		}
	case callerSession:
		if !(dashBackend{ep.srv}).Allowed(c.principal, "view", "intents", head.Tenant, "") {
			ep.publicReceipt(w, rp)
			return
		}
	default:
		ep.publicReceipt(w, rp)
		return
	}
	writeJSON(w, http.StatusOK, rp)
}

// adminEntry answers GET /v1/receipts/{index} for an admin entry.
func (ep ledgerAPI) adminEntry(w http.ResponseWriter, c caller, head receiptHead, rp *ledger.ReceiptProof) {
	switch {
	case c.kind == callerAdmin,
		c.kind == callerAuditor && c.sees(head.Tenant),
		c.kind == callerSession && c.principal.Role == fsm.RoleAdmin:
		writeJSON(w, http.StatusOK, rp)
	case c.kind == callerAuditor:
		writeError(w, protocol.CodeNotFound, "no receipt "+strconv.FormatInt(rp.Index, 10))
	default:
		ep.publicReceipt(w, rp)
	}
}

// receiptHead is what access to a receipt depends on.
type receiptHead struct {
	Type   string `json:"type"`
	Tenant string `json:"tenant"`
	Result *struct {
		Output string `json:"output"`
	} `json:"result"`
}

// carriesOutput reports whether the receipt's signed result holds a tool's
// output text (a writ.result/v1 result does; later versions hold its hash).
func (h receiptHead) carriesOutput() bool { return h.Result != nil && h.Result.Output != "" }

func (ep ledgerAPI) publicReceipt(w http.ResponseWriter, rp *ledger.ReceiptProof) {
	leaf, err := rp.Leaf()
	if err != nil {
		ep.ledgerError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, protocol.PublicReceipt{Index: rp.Index, LeafHash: ledger.LeafHash(leaf).String(),
		Proof: rp.Proof.Strings(), Checkpoint: rp.Checkpoint})
}

func (ep ledgerAPI) handleCheckpoint(w http.ResponseWriter, r *http.Request) {
	c, note, ok := ep.srv.ledger.Latest()
	if !ok {
		writeError(w, protocol.CodeNotFound, "no checkpoint has been published yet")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"checkpoint": string(note), "size": c.Size, "root": c.Root, "verifier_key": ep.srv.cfg.LedgerVerifierKey,
	})
}

func (ep ledgerAPI) handleConsistency(w http.ResponseWriter, r *http.Request) {
	from, err1 := strconv.ParseInt(r.URL.Query().Get("from"), 10, 64)
	to, err2 := strconv.ParseInt(r.URL.Query().Get("to"), 10, 64)
	c, _, ok := ep.srv.ledger.Latest()
	if err1 != nil || err2 != nil || from < 0 || from > to {
		writeError(w, protocol.CodeMalformed, "from and to must be sizes with from ≤ to")
		return
	}
	if !ok || to > c.Size {
		writeError(w, protocol.CodeNotFound, "to is beyond the latest checkpoint")
		return
	}
	proof, err := ep.srv.ledger.ConsistencyProof(from, to)
	if err != nil {
		ep.ledgerError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"from": from, "to": to, "proof": proof})
}

// attachReceipt adds an intent's receipt, its proof and the checkpoint it is
// proved against, waiting up to wait for a checkpoint that covers it (woken by
// the FSM when one is applied, not by polling).
//
// A receipt whose signed result carries the tool's output (a
// writ.result/v1, recorded before results committed to it by hash) goes only
// into an answer entitled to the output (withOutput): anyone holding a copy
// of a signed intent can resubmit it and be answered.
func (ep ledgerAPI) attachReceipt(ctx context.Context, resp *protocol.IntentResponse, index uint64, wait time.Duration, withOutput bool) {
	resp.ReceiptIndex = &index
	content := func(b []byte) jsontext.Value { return receiptContent(b, withOutput) }
	timer := time.NewTimer(max(wait, 0))
	defer timer.Stop()
	for {
		changed := ep.srv.reads.CheckpointChanged()
		rp, err := ep.srv.ledger.ProveReceipt(int64(index))
		if err == nil {
			resp.Receipt = content(rp.Receipt)
			resp.Proof = rp.Proof.Strings()
			resp.Checkpoint = rp.Checkpoint
			return
		}
		if wait <= 0 || !(errors.Is(err, ledger.ErrIndexOutOfRange) || errors.Is(err, ledger.ErrNotFound)) {
			// No checkpoint covers it yet: the receipt itself, without proof;
			// GET /v1/receipts/{index} proves it once one does.
			if leaf, lerr := ep.srv.ledger.Leaf(int64(index)); lerr == nil {
				resp.Receipt = content(leaf)
			}
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// receiptContent is the receipt leaf b as an intent's answer carries it:
// whole, unless its result carries the tool's output and the answer is not
// entitled to it (or it does not decode): then nothing.
func receiptContent(b []byte, withOutput bool) jsontext.Value {
	var h receiptHead
	if withOutput || (json.Unmarshal(b, &h) == nil && !h.carriesOutput()) {
		return jsontext.Value(b)
	}
	return nil
}
