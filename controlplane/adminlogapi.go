package controlplane

import (
	"net/http"
	"strconv"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/protocol"
)

// AdminEntryList is the body of GET /v1/ledger/admin: admin entries, newest
// first, each proved by GET /v1/receipts/{index} as a receipt is.
type AdminEntryList struct {
	Entries []*protocol.AdminEntry `json:"entries"`
}

// maxAdminList bounds one page of GET /v1/ledger/admin.
const maxAdminList = 1000

// handleAdminEntries lists the newest admin entries, newest first (limit,
// default 100; before, an index to list below). The admin token and an
// admin's session read every one; an auditor those of the tenants it sees
// (an auditor of all, every one); no one else any.
func (ep ledgerAPI) handleAdminEntries(w http.ResponseWriter, r *http.Request) {
	c, aerr := ep.srv.auth().callerOf(r)
	if aerr != nil {
		ep.srv.refuse(w, r, aerr)
		return
	}
	switch {
	case c.kind == callerAdmin, c.kind == callerAuditor:
	case c.kind == callerSession && c.principal.Role == fsm.RoleAdmin:
		c.all = true
	default:
		writeError(w, protocol.CodeUnauthorized, "admin entries are read with an admin or auditor token")
		return
	}
	q := r.URL.Query()
	limit, before := 100, uint64(0)
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxAdminList {
			writeError(w, protocol.CodeMalformed, "limit must be between 1 and 1000")
			return
		}
		limit = n
	}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseUint(v, 10, 63)
		if err != nil {
			writeError(w, protocol.CodeMalformed, "before must be a ledger index")
			return
		}
		before = n
	}
	out := AdminEntryList{Entries: []*protocol.AdminEntry{}}
	for _, i := range ep.srv.reads.AdminEntries(before, 0) {
		if len(out.Entries) == limit {
			break
		}
		leaf, err := ep.srv.ledger.Leaf(int64(i))
		if err != nil {
			continue // applied, not yet written: the next read has it
		}
		e, err := protocol.DecodeAdminEntry(leaf, 0)
		if err != nil {
			ep.ledgerError(w, err)
			return
		}
		if c.sees(e.Tenant) {
			out.Entries = append(out.Entries, e)
		}
	}
	writeJSON(w, http.StatusOK, out)
}
