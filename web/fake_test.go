package web

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// fakeBackend is an in-memory control plane for the dashboard's own tests:
// sessions, intents by id, and a policy of the roles' plain meaning. The real
// one is exercised end to end in cmd/writ's Chromium test.
type fakeBackend struct {
	mu       sync.Mutex
	sessions map[string]Principal
	intents  map[string]IntentDetail
	// intentReads counts calls of Intent.
	intentReads atomic.Int64
}

func newFake() *fakeBackend {
	return &fakeBackend{sessions: map[string]Principal{}, intents: map[string]IntentDetail{}}
}

func (f *fakeBackend) SignIn(_ context.Context, token string, ttl time.Duration) (string, Principal, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	role, ok := map[string]string{"tok-viewer": "viewer", "tok-approver": "approver", "tok-admin": "admin"}[token]
	if token == "tok-full" { // the control plane's session table is full
		return "", Principal{}, &Error{Status: 503, Code: "too_many_sessions", Message: "10000 sessions are open"}
	}
	if !ok {
		return "", Principal{}, &Error{Status: 401, Code: "unauthorized", Message: "no"}
	}
	p := Principal{User: token, Role: role, ExpiresAt: time.Now().Add(ttl)}
	if role == "approver" {
		p.Tenant, p.Approver = "acme", "alice"
	}
	secret := "secret-" + token
	f.sessions[secret] = p
	return secret, p, nil
}

func (f *fakeBackend) Session(secret string) (Principal, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.sessions[secret]
	return p, ok
}

func (f *fakeBackend) SignOut(_ context.Context, secret string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sessions, secret)
	return nil
}

func (f *fakeBackend) AdminToken(token string) bool { return token == "admin-secret" }

func (f *fakeBackend) Allowed(p Principal, action, page, tenant, intentPrincipal string) bool {
	switch action {
	case "view":
		return p.Tenant == "" || tenant == "" || tenant == p.Tenant
	case "decide":
		return p.Role == "approver" && tenant == p.Tenant && intentPrincipal != p.Approver
	}
	return p.Role == "admin"
}

func (f *fakeBackend) Overview() Overview { return Overview{Server: "s1", Leader: "s1"} }

func (f *fakeBackend) Intents(q IntentQuery) IntentPage {
	f.mu.Lock()
	defer f.mu.Unlock()
	var p IntentPage
	for _, in := range f.intents {
		if q.State == "" || in.State == q.State {
			p.Intents = append(p.Intents, in.IntentSummary)
		}
	}
	return p
}

func (f *fakeBackend) Intent(id string) (IntentDetail, bool) {
	f.intentReads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	in, ok := f.intents[id]
	return in, ok
}

func (f *fakeBackend) put(in IntentDetail) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.intents[in.ID] = in
}

func (f *fakeBackend) Checkpoint() (Checkpoint, bool)                         { return Checkpoint{}, false }
func (f *fakeBackend) ApproverKeys(tenant, approver string) map[string]string { return nil }
