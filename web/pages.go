package web

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The pages, by template name.
const (
	pageOverview  = "overview"
	pageFleet     = "fleet"
	pageNode      = "node"
	pageApprovals = "approvals"
	pageIntents   = "intents"
	pageIntent    = "intent"
	pageLedger    = "ledger"
)

// pageFunc fills a page's view for a signed-in principal, or answers with an
// error status and message.
type pageFunc func(r *http.Request, p Principal, v *view) (status int, msg string)

func (d *Dashboard) page(name string) http.HandlerFunc {
	fill := map[string]pageFunc{
		pageOverview: d.overviewPage, pageFleet: d.fleetPage, pageNode: d.nodePage, pageApprovals: d.approvalsPage,
		pageIntents: d.intentsPage, pageIntent: d.intentPage, pageLedger: d.ledgerPage,
		pageAudit: d.auditPage,
	}[name]
	return func(w http.ResponseWriter, r *http.Request) {
		secret, p, ok := d.session(r)
		if !ok {
			http.Redirect(w, r, "/ui/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		epoch, seq := d.hub.position()
		v := view{Nav: name, P: p, Signed: true, CSRF: csrfToken(secret), Epoch: epoch, Seq: seq, Can: d.can(p)}
		status, msg := fill(r, p, &v)
		if status != http.StatusOK {
			v.Title, v.Error, v.Live = http.StatusText(status), msg, ""
			d.render(w, status, "error", v)
			return
		}
		d.render(w, http.StatusOK, name, v)
	}
}

// can says which parts of the dashboard the principal's nav offers.
func (d *Dashboard) can(p Principal) map[string]bool {
	b := d.cfg.Backend
	return map[string]bool{
		"overview":  b.Allowed(p, "view", "overview", "", ""),
		"fleet":     b.Allowed(p, "view", "fleet", "", ""),
		"manage":    b.Allowed(p, "manage", "fleet", "", ""),
		"intents":   b.Allowed(p, "view", "intents", p.Tenant, ""),
		"approvals": b.Allowed(p, "view", "approvals", p.Tenant, ""),
		"ledger":    b.Allowed(p, "view", "ledger", "", ""),
		"audit":     d.admin != nil && b.Allowed(p, "manage", "audit", "", ""),
	}
}

const forbidden = "your role may not see this page"

func (d *Dashboard) overviewPage(r *http.Request, p Principal, v *view) (int, string) {
	if !v.Can["overview"] {
		return http.StatusForbidden, forbidden
	}
	o := d.cfg.Backend.Overview()
	if p.Tenant != "" {
		d.scopeOverview(&o, p.Tenant, time.Now())
	}
	max := 0
	for _, m := range o.Minutes {
		n := 0
		for _, c := range m.States {
			n += c
		}
		max = maxInt(max, n)
	}
	v.Title, v.Live, v.Data = "Overview", "intent node checkpoint", struct {
		Overview
		Max int
	}{o, max}
	return http.StatusOK, ""
}

// scopedIntents bounds the intents a tenant's overview reads.
const scopedIntents = 1000

// scopeOverview makes the overview's traffic and pending approvals a
// tenant's only: a viewer or approver of one tenant learns nothing of the
// others' traffic. They are counted from the tenant's intents admitted in the
// last 15 minutes (and its pending ones), at most scopedIntents of each.
func (d *Dashboard) scopeOverview(o *Overview, tenant string, now time.Time) {
	o.Tenant, o.Minutes, o.Pending = tenant, nil, 0
	end := now.UTC().Truncate(time.Minute)
	start := end.Add(-14 * time.Minute)
	per := map[time.Time]map[string]int{}
	d.eachIntent(IntentQuery{Tenant: tenant, Since: start}, o, func(s IntentSummary) {
		m := s.UpdatedAt.UTC().Truncate(time.Minute)
		if m.Before(start) || m.After(end) {
			return
		}
		if per[m] == nil {
			per[m] = map[string]int{}
		}
		per[m][s.State]++
	})
	for m := start; !m.After(end); m = m.Add(time.Minute) {
		if st := per[m]; len(st) > 0 {
			o.Minutes = append(o.Minutes, Minute{Start: m, States: st})
		}
	}
	d.eachIntent(IntentQuery{Tenant: tenant, State: "pending_approval"}, o, func(IntentSummary) { o.Pending++ })
}

// eachIntent calls f for the intents q finds, at most scopedIntents, and
// marks o capped when there were more.
func (d *Dashboard) eachIntent(q IntentQuery, o *Overview, f func(IntentSummary)) {
	q.Limit = 200
	for n := 0; ; {
		page := d.cfg.Backend.Intents(q)
		for _, s := range page.Intents {
			if n == scopedIntents {
				o.Capped = true
				return
			}
			f(s)
			n++
		}
		if page.Next == "" {
			return
		}
		q.Before = page.Next
	}
}

func (d *Dashboard) fleetPage(r *http.Request, p Principal, v *view) (int, string) {
	if !v.Can["fleet"] {
		return http.StatusForbidden, forbidden
	}
	var nodes []Node
	if d.fleet != nil {
		nodes = d.fleet.Nodes()
	}
	v.Title, v.Live, v.Data = "Fleet", "node", struct {
		HasFleet bool
		Nodes    []Node
	}{d.fleet != nil, nodes}
	return http.StatusOK, ""
}

func (d *Dashboard) nodePage(r *http.Request, p Principal, v *view) (int, string) {
	if !v.Can["fleet"] {
		return http.StatusForbidden, forbidden
	}
	if d.fleet == nil {
		return http.StatusNotFound, "this server has no fleet"
	}
	n, recent, ok := d.fleet.Node(r.PathValue("id"), 20)
	if !ok {
		return http.StatusNotFound, "no such node"
	}
	// Dispatches of tenants the principal may not view are left out.
	shown := recent[:0:0]
	for _, s := range recent {
		if d.cfg.Backend.Allowed(p, "view", "intents", s.Tenant, "") {
			shown = append(shown, s)
		}
	}
	v.Title, v.Live, v.Data = "Node "+n.Name, "node intent", struct {
		Node   Node
		Recent []IntentSummary
	}{n, shown}
	return http.StatusOK, ""
}

// approvalCard is one pending intent on the approvals page.
type approvalCard struct {
	IntentDetail
	CanDecide bool
	Why       string // why not, when it cannot
}

func (d *Dashboard) approvalsPage(r *http.Request, p Principal, v *view) (int, string) {
	if !v.Can["approvals"] {
		return http.StatusForbidden, forbidden
	}
	b := d.cfg.Backend
	page := b.Intents(IntentQuery{State: "pending_approval", Tenant: p.Tenant, Limit: 200})
	var cards []approvalCard
	for _, s := range page.Intents {
		in, ok := b.Intent(s.ID)
		if !ok || !b.Allowed(p, "view", "approvals", in.Tenant, "") {
			continue
		}
		c := approvalCard{IntentDetail: in, CanDecide: b.Allowed(p, "decide", "approvals", in.Tenant, in.Principal)}
		switch {
		case c.CanDecide:
		case p.Role == "approver" && in.Principal == p.Approver:
			c.Why = "This is your own intent: you cannot approve it."
		default:
			c.Why = "Your role may view this intent but not decide on it."
		}
		cards = append(cards, c)
	}
	var keys map[string]string
	if p.Role == "approver" {
		keys = b.ApproverKeys(p.Tenant, p.Approver)
	}
	v.Title, v.Live, v.Data = "Approvals", "intent", struct {
		Cards []approvalCard
		Keys  map[string]string
	}{cards, keys}
	return http.StatusOK, ""
}

func (d *Dashboard) intentsPage(r *http.Request, p Principal, v *view) (int, string) {
	q := r.URL.Query()
	iq := IntentQuery{Tenant: q.Get("tenant"), Tool: q.Get("tool"), Principal: q.Get("principal"), State: q.Get("state"),
		Before: q.Get("before"), Limit: 50}
	if p.Tenant != "" && iq.Tenant == "" {
		iq.Tenant = p.Tenant
	}
	if !d.cfg.Backend.Allowed(p, "view", "intents", iq.Tenant, "") {
		return http.StatusForbidden, forbidden
	}
	var err error
	if iq.Since, err = formTime(q.Get("since")); err != nil {
		return http.StatusBadRequest, "since: " + err.Error()
	}
	if iq.Until, err = formTime(q.Get("until")); err != nil {
		return http.StatusBadRequest, "until: " + err.Error()
	}
	page := d.cfg.Backend.Intents(iq)
	next := ""
	if page.Next != "" {
		nq := r.URL.Query()
		nq.Set("before", page.Next)
		next = "/ui/intents?" + nq.Encode()
	}
	v.Title, v.Live, v.Data = "Intents", "intent", struct {
		Q      IntentQuery
		Since  string
		Until  string
		States []string
		Page   IntentPage
		Next   string
		First  bool
	}{iq, q.Get("since"), q.Get("until"), states, page, next, iq.Before == ""}
	return http.StatusOK, ""
}

var states = []string{"pending_approval", "queued", "dispatched", "completed", "failed", "denied", "rejected", "expired", "unknown", "canceled"}

// formTime reads a datetime-local field (taken as UTC) or RFC 3339.
func formTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errBadTime
}

type pageError string

func (e pageError) Error() string { return string(e) }

const errBadTime = pageError("a time is YYYY-MM-DDTHH:MM (UTC) or RFC 3339")

func (d *Dashboard) intentPage(r *http.Request, p Principal, v *view) (int, string) {
	in, ok := d.cfg.Backend.Intent(r.PathValue("id"))
	if !ok || !d.cfg.Backend.Allowed(p, "view", "intents", in.Tenant, "") {
		return http.StatusNotFound, "no such intent"
	}
	v.Title, v.Live, v.Data = "Intent "+in.ID, "intent", in
	return http.StatusOK, ""
}

func (d *Dashboard) ledgerPage(r *http.Request, p Principal, v *view) (int, string) {
	if !v.Can["ledger"] {
		return http.StatusForbidden, forbidden
	}
	q := r.URL.Query()
	data := struct {
		Checkpoint *Checkpoint
		Index      string
		IntentID   string
		Lookup     string // the receipt index to fetch and verify, if any
		Error      string
	}{Index: q.Get("index"), IntentID: q.Get("intent")}
	if cp, ok := d.cfg.Backend.Checkpoint(); ok {
		data.Checkpoint = &cp
	}
	switch {
	case data.Index != "":
		if _, err := strconv.ParseUint(data.Index, 10, 63); err != nil {
			data.Error = "a receipt index is a whole number"
		} else {
			data.Lookup = data.Index
		}
	case data.IntentID != "":
		in, ok := d.cfg.Backend.Intent(strings.TrimSpace(data.IntentID))
		switch {
		case !ok || !d.cfg.Backend.Allowed(p, "view", "intents", in.Tenant, ""):
			data.Error = "no intent " + data.IntentID
		case in.Receipt == nil:
			data.Error = "intent " + in.ID + " has no receipt yet (it is " + in.State + ")"
		default:
			data.Lookup = strconv.FormatUint(*in.Receipt, 10)
		}
	}
	v.Title, v.Live, v.Data = "Ledger", "checkpoint", data
	return http.StatusOK, ""
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
