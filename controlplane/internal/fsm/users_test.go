package fsm

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/writhq/writ/protocol"
)

func TestUserSessions(t *testing.T) {
	f := newFSM(t)
	b := &logBuilder{t: t}
	var observed [][]string
	f.Observe(func(_ uint64, keys []string, _ bool) { observed = append(observed, keys) })
	put := PutUser{ID: "u1", Hash: "sha256:s1", Role: RoleApprover, Tenant: "acme", Approver: "alice", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if r := apply(t, f, b, MsgPutUser, put); r.Err != nil {
		t.Fatal(r.Err)
	}
	for _, bad := range []PutUser{
		{ID: "u2", Hash: "sha256:x", Role: "root", ExpiresAt: t0.Add(time.Hour)},
		{ID: "u3", Hash: "sha256:x", Role: RoleApprover, Tenant: "acme", ExpiresAt: t0.Add(time.Hour)},
		put,
	} {
		if r := apply(t, f, b, MsgPutUser, bad); r.Err == nil {
			t.Errorf("user %+v was stored", bad)
		}
	}
	open := func(hash, user, token string, at time.Time) Result {
		return apply(t, f, b, MsgOpenSession, OpenSession{At: at, Hash: hash, User: user, TokenHash: token, ExpiresAt: at.Add(8 * time.Hour)})
	}
	if r := open("sess-a", "u1", "sha256:wrong", t0); r.Err == nil || r.Err.Code != protocol.CodeInvalidToken {
		t.Fatalf("a wrong token opened a session: %+v", r)
	}
	if r := open("sess-a", "u1", "sha256:s1", t0); r.Err != nil {
		t.Fatal(r.Err)
	}
	s, ok := f.Reader().Session("sess-a")
	if !ok || s.Role != RoleApprover || s.Approver != "alice" || s.Tenant != "acme" || !s.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("session %+v, %v: want approver alice of acme, ending with its token", s, ok)
	}
	if r := open("sess-b", AdminTokenUser, "", t0); r.Err != nil {
		t.Fatal(r.Err)
	}
	if s, _ := f.Reader().Session("sess-b"); s.Role != RoleAdmin {
		t.Fatalf("admin-token session has role %q", s.Role)
	}
	apply(t, f, b, MsgCloseSession, CloseSession{Hash: "sess-b"})
	if _, ok := f.Reader().Session("sess-b"); ok {
		t.Fatal("a closed session is still open")
	}
	apply(t, f, b, MsgDeleteUser, DeleteUser{ID: "u1"})
	if _, ok := f.Reader().Session("sess-a"); ok {
		t.Fatal("deleting a user left its session open")
	}
	if r := open("sess-c", "u1", "sha256:s1", t0); r.Err == nil {
		t.Fatal("a deleted token opened a session")
	}
	apply(t, f, b, MsgPutUser, PutUser{ID: "u4", Hash: "sha256:s4", Role: RoleViewer, CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)})
	if r := open("sess-d", "u4", "sha256:s4", t0.Add(time.Minute)); r.Err == nil {
		t.Fatal("an expired token opened a session")
	}
	if len(observed) != 0 {
		t.Fatalf("user commands told the observer of changes: %v", observed)
	}
	// Users and sessions replay to the same state.
	got, _ := f.Encode()
	want, _ := replay(t, b.logs).Encode()
	if string(got) != string(want) {
		t.Fatal("replaying user commands gives another state")
	}
}

func TestObserverSeesChanges(t *testing.T) {
	f, b := fleetFSM(t)
	var keys []string
	f.Observe(func(_ uint64, k []string, _ bool) { keys = append(keys, k...) })
	apply(t, f, b, MsgAdmit, admit("i1", "k1", "p", t0))
	if !slices.Contains(keys, "i1") || !slices.Contains(keys, NodeWatch("n1")) {
		t.Fatalf("observed %q; want the intent and its node", keys)
	}
}

// TestAuditorUser: an auditor token is stored with its outputs grant, which
// no other role may carry, and never opens a dashboard session.
func TestAuditorUser(t *testing.T) {
	f := newFSM(t)
	b := &logBuilder{t: t}
	aud := PutUser{ID: "a1", Hash: "sha256:a1", Role: RoleAuditor, Tenant: "acme", Outputs: true, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if r := apply(t, f, b, MsgPutUser, aud); r.Err != nil {
		t.Fatal(r.Err)
	}
	if u, ok := f.Reader().User("a1"); !ok || u.Role != RoleAuditor || u.Tenant != "acme" || !u.Outputs {
		t.Fatalf("auditor %+v, %v", u, ok)
	}
	bad := PutUser{ID: "v1", Hash: "sha256:v1", Role: RoleViewer, Outputs: true, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if r := apply(t, f, b, MsgPutUser, bad); r.Err == nil {
		t.Fatal("a viewer was granted outputs")
	}
	r := apply(t, f, b, MsgOpenSession, OpenSession{At: t0, Hash: "sess-a", User: "a1", TokenHash: "sha256:a1", ExpiresAt: t0.Add(time.Hour)})
	if r.Err == nil || r.Err.Code != protocol.CodeInvalidToken {
		t.Fatalf("an auditor token opened a session: %+v", r)
	}
	if _, ok := f.Reader().Session("sess-a"); ok {
		t.Fatal("an auditor session is open")
	}
}

// TestSessionCapPerUser: opening a session past the user's cap closes that
// user's oldest, never another user's, and a full table refuses with its
// own code.
func TestSessionCapPerUser(t *testing.T) {
	f := newFSM(t)
	b := &logBuilder{t: t}
	apply(t, f, b, MsgPutUser, PutUser{ID: "v", Hash: "sha256:v", Role: RoleViewer, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)})
	open := func(hash, user, token string, at time.Time, max int) Result {
		return apply(t, f, b, MsgOpenSession, OpenSession{At: at, Hash: hash, User: user, TokenHash: token,
			ExpiresAt: at.Add(time.Hour), MaxPerUser: max})
	}
	if r := open("sha256:aaaa0000000000000000admin", AdminTokenUser, "", t0, 3); r.Err != nil {
		t.Fatal(r.Err)
	}
	for i := range 10 {
		// Hashes in the reverse order of opening: eviction goes by time.
		h := fmt.Sprintf("sha256:%016d", 100-i)
		if r := open(h, "v", "sha256:v", t0.Add(time.Duration(i)*time.Second), 3); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	var viewer []string
	for _, s := range f.Reader().Sessions() {
		if s.User == "v" {
			viewer = append(viewer, s.ID)
		}
	}
	if want := []string{"0000000000000093", "0000000000000092", "0000000000000091"}; !slices.Equal(viewer, want) {
		t.Fatalf("the viewer's sessions: got %v, want its 3 newest %v", viewer, want)
	}
	if _, ok := f.Reader().Session("sha256:aaaa0000000000000000admin"); !ok {
		t.Fatal("the viewer's sessions closed the admin's")
	}
	if h, ok := f.Reader().SessionHash("0000000000000092"); !ok || h != "sha256:0000000000000092" {
		t.Fatalf("SessionHash: got %q %v", h, ok)
	}
	// Entries without a cap (written before it) keep every session.
	for i := range 3 {
		open(fmt.Sprintf("sha256:%016d", 200+i), "v", "sha256:v", t0.Add(time.Minute), 0)
	}
	if n := len(f.Reader().Sessions()); n != 7 {
		t.Fatalf("uncapped opens: %d sessions, want 7", n)
	}
	// A full table refuses with too_many_sessions, and closes nothing.
	for i := len(f.state.Sessions); i < MaxSessions; i++ {
		f.state.Sessions[fmt.Sprintf("sha256:f%015d", i)] = &Session{User: fmt.Sprintf("u%d", i), ExpiresAt: t0.Add(time.Hour)}
	}
	if r := open("sha256:new", AdminTokenUser, "", t0.Add(time.Minute), 3); r.Err == nil || r.Err.Code != protocol.CodeTooManySessions {
		t.Fatalf("a sign-in into a full table: %+v, want %s", r, protocol.CodeTooManySessions)
	}
	if n := len(f.state.Sessions); n != MaxSessions {
		t.Fatalf("a refused sign-in left %d sessions, want %d", n, MaxSessions)
	}
}
