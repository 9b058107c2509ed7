package fsm

import (
	"cmp"
	"crypto/subtle"
	"slices"
	"strings"
	"time"

	"github.com/writhq/writ/protocol"
)

// Dashboard users and their sessions. A user is a token an admin issued
// (viewer, approver or admin); only its secret's hash is kept, and sessions
// are kept by the hash of their cookie, so the state, the log and snapshots
// hold nothing a browser could sign in with. Both are replicated, so a token
// and a session work on every server.
const (
	MsgPutUser      MsgType = 48
	MsgDeleteUser   MsgType = 49
	MsgOpenSession  MsgType = 50
	MsgCloseSession MsgType = 51
)

// Dashboard roles.
const (
	RoleViewer   = "viewer"
	RoleApprover = "approver"
	RoleAdmin    = "admin"
	// RoleAuditor reads receipts through the API with its token as a
	// bearer (all tenants, or one); it does not sign in to the dashboard.
	RoleAuditor = "auditor"
)

// AdminTokenUser is the user of a session opened with a configured admin
// token, which the FSM does not hold: the leader checked it.
const AdminTokenUser = "admin-token"

// MaxSessions bounds the open sessions; past it, after pruning the expired
// ones and the user's oldest past its own cap, sign-in is refused. The
// per-user cap (OpenSession.MaxPerUser) keeps any one token from filling
// the table: 10,000 sessions take more than 1,000 tokens at the default cap.
const MaxSessions = 10_000

// SessionIDLen is the length of a session's id: the first hex digits of the
// hash of its cookie's secret, enough to name it to an admin and nothing a
// browser could sign in with.
const SessionIDLen = 16

// User is a dashboard user: a token issued by an admin. An approver is bound
// to an approver identity of one tenant; a viewer may be limited to one
// tenant ("" sees every tenant).
type User struct {
	ID       string `json:"id"`
	Hash     string `json:"hash"` // of the token's secret
	Role     string `json:"role"`
	Tenant   string `json:"tenant,omitzero"`
	Approver string `json:"approver,omitzero"`
	// Outputs lets an auditor read tools' outputs too.
	Outputs   bool      `json:"outputs,omitzero"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// PutUser stores a user token.
type PutUser = User

// DeleteUser revokes a user token and closes its sessions.
type DeleteUser struct {
	ID string `json:"id"`
}

// OpenSession opens a session for a user whose token the leader checked; the
// FSM checks TokenHash again, so a deleted or expired token opens nothing
// whatever the leader saw. A session of AdminTokenUser carries its role.
type OpenSession struct {
	At        time.Time `json:"at"`
	Hash      string    `json:"hash"` // of the session cookie's secret
	User      string    `json:"user"`
	TokenHash string    `json:"token_hash,omitzero"`
	ExpiresAt time.Time `json:"expires_at"`
	// MaxPerUser is the leader's cap of sessions per user: opening one more
	// closes the user's oldest. 0, as in entries written before the cap,
	// is no cap; the value travels in the entry so that every server and
	// every replay applies the same cap.
	MaxPerUser int `json:"max_per_user,omitzero"`
}

// CloseSession ends a session (sign-out).
type CloseSession struct {
	Hash string `json:"hash"`
}

// Session is an open dashboard session: who it is, with the user's role and
// binding copied in when it opened.
type Session struct {
	User      string    `json:"user"`
	Role      string    `json:"role"`
	Tenant    string    `json:"tenant,omitzero"`
	Approver  string    `json:"approver,omitzero"`
	ExpiresAt time.Time `json:"expires_at"`
	// OpenedAt orders a user's sessions for eviction (zero in sessions
	// opened before it was kept: those go first).
	OpenedAt time.Time `json:"opened_at,omitzero"`
}

// SessionInfo is an open session as an admin lists it.
type SessionInfo struct {
	Session
	ID string `json:"id"`
}

func (f *FSM) applyPutUser(c *PutUser) Result {
	switch c.Role {
	case RoleViewer, RoleAdmin, RoleAuditor:
	case RoleApprover:
		if c.Tenant == "" || c.Approver == "" {
			return refuse(protocol.CodeMalformed, "an approver is bound to a tenant and an approver identity")
		}
	default:
		return refuse(protocol.CodeMalformed, "role %q is not viewer, approver, admin or auditor", c.Role)
	}
	if c.Outputs && c.Role != RoleAuditor {
		return refuse(protocol.CodeMalformed, "only an auditor is granted outputs")
	}
	f.advance(c.CreatedAt)
	if _, ok := f.state.Users[c.ID]; ok {
		return refuse(protocol.CodeIdempotencyConflict, "user %q exists", c.ID)
	}
	u := *c
	f.state.Users[c.ID] = &u
	return Result{}
}

func (f *FSM) applyDeleteUser(c *DeleteUser) Result {
	if _, ok := f.state.Users[c.ID]; !ok {
		return refuse(protocol.CodeNotFound, "no user %q", c.ID)
	}
	delete(f.state.Users, c.ID)
	for h, s := range f.state.Sessions {
		if s.User == c.ID {
			delete(f.state.Sessions, h)
		}
	}
	return Result{}
}

func (f *FSM) applyOpenSession(c *OpenSession) Result {
	now := f.advance(c.At)
	s := &Session{User: c.User, Role: RoleAdmin, ExpiresAt: c.ExpiresAt.UTC(), OpenedAt: now}
	if c.User != AdminTokenUser {
		u := f.state.Users[c.User]
		if u == nil || subtle.ConstantTimeCompare([]byte(u.Hash), []byte(c.TokenHash)) != 1 || !u.ExpiresAt.After(now) {
			return refuse(protocol.CodeInvalidToken, "the token is not valid")
		}
		if u.Role == RoleAuditor {
			return refuse(protocol.CodeInvalidToken, "an auditor token reads the API; it does not sign in")
		}
		s.Role, s.Tenant, s.Approver = u.Role, u.Tenant, u.Approver
		if u.ExpiresAt.Before(s.ExpiresAt) {
			s.ExpiresAt = u.ExpiresAt
		}
	}
	if _, ok := f.state.Sessions[c.Hash]; ok {
		return refuse(protocol.CodeIdempotencyConflict, "session exists")
	}
	f.pruneSessions(now)
	if c.MaxPerUser > 0 {
		f.evictOldest(c.User, c.MaxPerUser-1)
	}
	if len(f.state.Sessions) >= MaxSessions {
		return refuse(protocol.CodeTooManySessions, "%d sessions are open", MaxSessions)
	}
	f.state.Sessions[c.Hash] = s
	return Result{}
}

// evictOldest closes user's oldest sessions until keep are left. Ties on
// OpenedAt are broken by hash, so every server closes the same ones.
func (f *FSM) evictOldest(user string, keep int) {
	var mine []string
	for h, s := range f.state.Sessions {
		if s.User == user {
			mine = append(mine, h)
		}
	}
	if len(mine) <= keep {
		return
	}
	slices.SortFunc(mine, func(a, b string) int {
		if c := f.state.Sessions[a].OpenedAt.Compare(f.state.Sessions[b].OpenedAt); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	for _, h := range mine[:len(mine)-keep] {
		delete(f.state.Sessions, h)
	}
}

// pruneSessions forgets expired sessions and users, at each sign-in: the
// sessions are bounded, so this costs what MaxSessions does at most. Deleting
// while ranging is deterministic: what is deleted does not depend on the
// order.
func (f *FSM) pruneSessions(now time.Time) {
	for h, s := range f.state.Sessions {
		if !s.ExpiresAt.After(now) {
			delete(f.state.Sessions, h)
		}
	}
	for id, u := range f.state.Users {
		if !u.ExpiresAt.After(now) {
			delete(f.state.Users, id)
		}
	}
}

// User returns a dashboard user.
func (rd Reader) User(id string) (User, bool) {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	u, ok := rd.f.state.Users[id]
	if !ok {
		return User{}, false
	}
	return *u, true
}

// Session returns the session whose cookie secret hashes to hash. The caller
// checks its expiry against its own clock.
func (rd Reader) Session(hash string) (Session, bool) {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	s, ok := rd.f.state.Sessions[hash]
	if !ok {
		return Session{}, false
	}
	return *s, true
}

// Users returns the dashboard users, by id.
func (rd Reader) Users() []User {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	out := make([]User, 0, len(rd.f.state.Users))
	for _, u := range rd.f.state.Users {
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b User) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Sessions returns the open sessions, oldest first, each with its id
// (SessionID). The caller drops the expired ones by its own clock.
func (rd Reader) Sessions() []SessionInfo {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	out := make([]SessionInfo, 0, len(rd.f.state.Sessions))
	for h, s := range rd.f.state.Sessions {
		out = append(out, SessionInfo{Session: *s, ID: SessionID(h)})
	}
	slices.SortFunc(out, func(a, b SessionInfo) int {
		if c := a.OpenedAt.Compare(b.OpenedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// SessionHash returns the hash of the open session whose id is id; false
// when none or more than one has it.
func (rd Reader) SessionHash(id string) (string, bool) {
	if len(id) != SessionIDLen {
		return "", false
	}
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	found := ""
	for h := range rd.f.state.Sessions {
		if SessionID(h) == id {
			if found != "" {
				return "", false
			}
			found = h
		}
	}
	return found, found != ""
}

// SessionID is the id of the session whose cookie secret hashes to hash.
func SessionID(hash string) string {
	h := strings.TrimPrefix(hash, "sha256:")
	return h[:min(len(h), SessionIDLen)]
}

func (f *FSM) applyUsers(t MsgType, decode func(any)) Result {
	switch t {
	case MsgPutUser:
		var c PutUser
		decode(&c)
		return f.applyPutUser(&c)
	case MsgDeleteUser:
		var c DeleteUser
		decode(&c)
		return f.applyDeleteUser(&c)
	case MsgOpenSession:
		var c OpenSession
		decode(&c)
		return f.applyOpenSession(&c)
	default:
		var c CloseSession
		decode(&c)
		delete(f.state.Sessions, c.Hash)
		return Result{}
	}
}

func userMsgName(t MsgType) string {
	return map[MsgType]string{MsgPutUser: "put_user", MsgDeleteUser: "delete_user",
		MsgOpenSession: "open_session", MsgCloseSession: "close_session"}[t]
}
