package controlplane

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/policy"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/web"
)

// routes mounts the dashboard area: the dashboard (/ui/, served by
// dashboardFront) and its event stream (/v1/events), and tells the
// dashboard of every change the FSM applies.
func (b dashBackend) routes(mux *routeMux) {
	cfg := web.DefaultConfig()
	cfg.Backend, cfg.Secure, cfg.Logger = b, !b.s.cfg.Dev, b.s.log
	d, err := web.New(cfg)
	if err != nil {
		// The embedded templates are part of the binary: a broken one is a
		// build that must not ship.
		panic(err)
	}
	b.s.dash = d
	b.s.fsm.Observe(func(index uint64, keys []string, reset bool) {
		d.Changed(index, changesOf(keys), reset)
		if b.s.hooks != nil {
			b.s.hooks.changed(keys)
		}
	})
	go func() {
		<-b.s.stop
		b.s.fsm.Observe(nil)
		d.Close()
	}()
	// /ui/ is served by dashboardFront, before any forwarding.
	mux.Handle("GET /v1/events", d.Events())
	mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusSeeOther))
}

// dashboardFront serves the dashboard in front of the API's forwarding to
// the leader. Its pages and forms are answered by this server, whichever it
// is: sessions are replicated, and what they write reaches the leader by the
// servers' relay (applyAnywhere). An approval sent with the session cookie
// is checked here (CSRF token, role, approver identity, policy) before it
// goes on, as any approval does, to the leader, without the cookie.
func (b dashBackend) dashboardFront(api http.Handler) http.Handler {
	approvals := b.s.dash.GuardApproval(api)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/ui/"):
			b.s.dash.ServeHTTP(w, r)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/approvals":
			approvals.ServeHTTP(w, r)
		default:
			api.ServeHTTP(w, r)
		}
	})
}

// changesOf names the FSM's watch keys as the dashboard's changes.
func changesOf(keys []string) []web.Change {
	out := make([]web.Change, 0, len(keys))
	for _, k := range keys {
		switch {
		case k == fsm.CheckpointWatch:
			out = append(out, web.Change{Kind: "checkpoint"})
		case strings.HasPrefix(k, fsm.NodeWatch("")):
			out = append(out, web.Change{Kind: "node", ID: strings.TrimPrefix(k, fsm.NodeWatch(""))})
		case !strings.HasPrefix(k, "\x00"):
			out = append(out, web.Change{Kind: "intent", ID: k})
		}
	}
	return out
}

// dashBackend is the control plane as the dashboard sees it (web.Backend),
// and the dashboard area of the API: its routes and dashboardFront are in
// dashboard.go, the views it reads in dashboardviews.go, the changes it
// makes in dashboardadmin.go.
type dashBackend struct{ s *Server }

var (
	_ web.Backend    = dashBackend{}
	_ web.Fleet      = dashBackend{}
	_ web.Summarizer = dashBackend{}
)

func webError(aerr *apiError) *web.Error {
	return &web.Error{Status: protocol.HTTPStatus(aerr.code), Code: string(aerr.code), Message: aerr.msg}
}

func (b dashBackend) SignIn(ctx context.Context, token string, ttl time.Duration) (string, web.Principal, error) {
	s := b.s
	now := s.now()
	cmd := fsm.OpenSession{At: now, User: fsm.AdminTokenUser, ExpiresAt: now.Add(ttl), MaxPerUser: s.cfg.MaxSessionsPerUser}
	if !s.auth().adminToken(token) {
		id, secret, ok := parseUserToken(token)
		if !ok {
			return "", web.Principal{}, &web.Error{Status: http.StatusUnauthorized, Code: string(protocol.CodeUnauthorized), Message: "not a token"}
		}
		cmd.User, cmd.TokenHash = id, protocol.HashBytes(secret)
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	secret := base64.RawURLEncoding.EncodeToString(raw)
	cmd.Hash = protocol.HashBytes([]byte(secret))
	res, err := s.applyAnywhere(ctx, fsm.MsgOpenSession, cmd)
	if err != nil {
		return "", web.Principal{}, webError(raftError(err))
	}
	if res.Err != nil && res.Err.Code == protocol.CodeTooManySessions {
		return "", web.Principal{}, &web.Error{Status: http.StatusServiceUnavailable, Code: string(res.Err.Code), Message: res.Err.Message}
	}
	if res.Err != nil {
		return "", web.Principal{}, &web.Error{Status: http.StatusUnauthorized, Code: string(protocol.CodeUnauthorized), Message: res.Err.Message}
	}
	// On a follower the leader committed it; wait until it is applied here.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if p, ok := b.Session(secret); ok {
			return secret, p, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", web.Principal{}, &web.Error{Status: http.StatusServiceUnavailable, Code: string(protocol.CodeNoLeader), Message: "the session was not applied here in time; retry"}
		}
	}
}

func (b dashBackend) Session(secret string) (web.Principal, bool) {
	ss, ok := b.s.reads.Session(protocol.HashBytes([]byte(secret)))
	if !ok || !ss.ExpiresAt.After(b.s.now()) {
		return web.Principal{}, false
	}
	return web.Principal{User: ss.User, Role: ss.Role, Tenant: ss.Tenant, Approver: ss.Approver, ExpiresAt: ss.ExpiresAt}, true
}

func (b dashBackend) SignOut(ctx context.Context, secret string) error {
	if _, err := b.s.applyAnywhere(ctx, fsm.MsgCloseSession, fsm.CloseSession{Hash: protocol.HashBytes([]byte(secret))}); err != nil {
		return webError(raftError(err))
	}
	return nil
}

func (b dashBackend) AdminToken(token string) bool { return b.s.auth().adminToken(token) }

// dashboardPolicy is the built-in policy of dashboard roles, parsed once.
var dashboardPolicy = func() *policy.Set {
	set, err := policy.Parse([]byte(policy.DashboardPolicy))
	if err != nil {
		panic(err)
	}
	return set
}()

func (b dashBackend) Allowed(p web.Principal, action, page, tenant, intentPrincipal string) bool {
	name := p.User
	if p.Role == fsm.RoleApprover {
		name = p.Approver
	}
	req, err := policy.NewDashboardRequest(policy.DashboardUser{Role: p.Role, Name: name, Tenant: p.Tenant}, action, page, tenant, intentPrincipal)
	if err != nil {
		return false
	}
	return dashboardPolicy.Dashboard(req).Allow
}

func (b dashBackend) Checkpoint() (web.Checkpoint, bool) {
	c, note, ok := b.s.ledger.Latest()
	if !ok {
		return web.Checkpoint{}, false
	}
	return web.Checkpoint{Origin: c.Origin, Size: c.Size, Root: base64.StdEncoding.EncodeToString(c.Root[:]),
		Note: string(note), VerifierKey: b.s.cfg.LedgerVerifierKey}, true
}

func (b dashBackend) ApproverKeys(tenant, approver string) map[string]string {
	out := map[string]string{}
	for id, pub := range b.s.reads.ApproverKeys(tenant, approver) {
		out[id] = base64.StdEncoding.EncodeToString(pub)
	}
	return out
}

// relayedDashboardCommand decodes a dashboard command a follower relayed,
// with the leader's clock in place of the follower's.
func relayedDashboardCommand(s *Server, t fsm.MsgType, raw []byte) (any, error) {
	switch t {
	case fsm.MsgOpenSession:
		c := &fsm.OpenSession{}
		err := jsonx.UnmarshalLenient(raw, c)
		c.At, c.MaxPerUser = s.now(), s.cfg.MaxSessionsPerUser
		return c, err
	case fsm.MsgCloseSession:
		c := &fsm.CloseSession{}
		return c, jsonx.UnmarshalLenient(raw, c)
	case fsm.MsgNodeStatus:
		c := &fsm.NodeStatus{}
		err := jsonx.UnmarshalLenient(raw, c)
		c.At = s.now()
		return c, err
	case fsm.MsgAdmin:
		return relayedAdminChange(s, raw)
	}
	return nil, fmt.Errorf("command %s is not relayed", t)
}
