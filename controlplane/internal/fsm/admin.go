package fsm

import (
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/protocol"
)

// MsgAdmin carries an administrator's change (an AdminCmd): the FSM applies
// the command inside it and, unless that command is refused or changes
// nothing, appends an admin entry (protocol.AdminEntry) to the ledger in the
// same apply, so the
// change and its record are one Raft entry on every replica. Commands
// proposed bare (entries written before MsgAdmin existed, and what servers
// do on their own) record nothing.
const MsgAdmin MsgType = 44

// AdminCmd is an admin change and who made it. At is the leader's time of
// the change; the entry records the log's clock once it has advanced to it.
type AdminCmd struct {
	Actor string         `json:"actor"`
	At    time.Time      `json:"at"`
	Type  MsgType        `json:"type"`
	Cmd   jsontext.Value `json:"cmd"`
	// Authz marks an entry whose change the FSM counts as an authorization
	// change when it is one (State.AuthIndex, authz.go); absent in entries
	// written before that was kept.
	Authz bool `json:"authz,omitzero"`
}

// MaxAdminEntries bounds the ledger indexes of admin entries the state
// keeps for listing (State.Admin): the oldest are dropped first; the
// entries themselves stay in the ledger.
const MaxAdminEntries = 4096

// adminObject is what an admin command changes: its action, its name, the
// tenant it belongs to, and how to hash its state ("" when there is none).
type adminObject struct {
	action, object, tenant string
	state                  func(s *State) string
	// owner, when the command does not name the object's tenant, finds it
	// in the state (before the change for a delete, after it for a create).
	owner func(s *State) string
}

// adminObjectOf names the object of an admin command. A type that is not an
// admin change is a bug in the leader that proposed it.
func adminObjectOf(t MsgType, data []byte) (adminObject, error) {
	decode := func(v any) error { return json.Unmarshal(data, v) }
	switch t {
	case MsgPutTenant:
		var c PutTenant
		err := decode(&c)
		return adminObject{protocol.AdminTenantPut, c.Tenant, c.Tenant, func(s *State) string {
			tn := s.Tenants[c.Tenant]
			if tn == nil {
				return ""
			}
			return stateHash(map[string]any{"tenant": c.Tenant, "run_budget": tn.RunBudget})
		}, nil}, err
	case MsgPutIntentKey, MsgDeleteIntentKey:
		var c DeleteKey
		err := decode(&c)
		a := protocol.AdminKeyPut
		if t == MsgDeleteIntentKey {
			a = protocol.AdminKeyDelete
		}
		return adminObject{a, c.Tenant + "/" + c.KeyID, c.Tenant, func(s *State) string {
			tn := s.Tenants[c.Tenant]
			if tn == nil || tn.IntentKeys[c.KeyID] == nil {
				return ""
			}
			// The secret is sealed with a random nonce: its hash tells
			// nothing of it, and changes when the key does.
			return stateHash(map[string]any{"tenant": c.Tenant, "key_id": c.KeyID, "sealed": tn.IntentKeys[c.KeyID]})
		}, nil}, err
	case MsgPutApproverKey, MsgDeleteApproverKey:
		var c DeleteKey
		err := decode(&c)
		a := protocol.AdminApproverPut
		if t == MsgDeleteApproverKey {
			a = protocol.AdminApproverDelete
		}
		return adminObject{a, c.Tenant + "/" + c.KeyID, c.Tenant, func(s *State) string {
			tn := s.Tenants[c.Tenant]
			if tn == nil || tn.ApproverKeys[c.KeyID] == nil {
				return ""
			}
			return stateHash(map[string]any{"tenant": c.Tenant, "key_id": c.KeyID, "key": tn.ApproverKeys[c.KeyID]})
		}, nil}, err
	case MsgPutTool:
		var c struct {
			Name string `json:"name"`
		}
		err := decode(&c)
		return adminObject{protocol.AdminToolPut, c.Name, "", func(s *State) string {
			return stateHash(s.Tools[c.Name])
		}, nil}, err
	case MsgPutPolicy:
		var c PutPolicy
		err := decode(&c)
		a := protocol.AdminPolicyPut
		if c.RollbackOf != 0 {
			a = protocol.AdminPolicyRollback
		}
		// The policy set's own hash, which receipts name.
		return adminObject{a, "policy", "", func(s *State) string { return s.Policy.Hash }, nil}, err
	case MsgPutUser, MsgDeleteUser:
		var c DeleteUser
		err := decode(&c)
		a := protocol.AdminTokenCreate
		if t == MsgDeleteUser {
			a = protocol.AdminTokenRevoke
		}
		return adminObject{a, c.ID, "", func(s *State) string { return stateHash(s.Users[c.ID]) }, func(s *State) string {
			if u := s.Users[c.ID]; u != nil {
				return u.Tenant
			}
			return ""
		}}, err
	case MsgCloseSession:
		var c CloseSession
		err := decode(&c)
		return adminObject{protocol.AdminSessionRevoke, SessionID(c.Hash), "", func(s *State) string {
			return stateHash(s.Sessions[c.Hash])
		}, func(s *State) string {
			if ss := s.Sessions[c.Hash]; ss != nil {
				return ss.Tenant
			}
			return ""
		}}, err
	case MsgPutJoinToken:
		var c struct {
			ID string `json:"id"`
		}
		err := decode(&c)
		return adminObject{protocol.AdminJoinTokenCreate, c.ID, "", func(s *State) string {
			return stateHash(s.JoinTokens[c.ID])
		}, nil}, err
	case MsgNodeStatus:
		var c NodeStatus
		err := decode(&c)
		a := map[string]string{NodeDraining: protocol.AdminNodeDrain, NodeReady: protocol.AdminNodeReady,
			NodeRevoked: protocol.AdminNodeRevoke}[c.Status]
		if a == "" {
			a = protocol.AdminNodeDrain // refused by the command itself, so never recorded
		}
		return adminObject{a, c.Node, "", func(s *State) string {
			n := s.Nodes[c.Node]
			if n == nil {
				return ""
			}
			// Its administered state only: heartbeats and load change the rest.
			return stateHash(map[string]any{"node": n.ID, "status": n.Status})
		}, nil}, err
	case MsgPutLock, MsgDeleteLock:
		var c struct {
			ID   string `json:"id"`
			Lock struct {
				ID     string `json:"id"`
				Tenant string `json:"tenant"`
			} `json:"lock"`
		}
		err := decode(&c)
		a, id := protocol.AdminLockDelete, c.ID
		if t == MsgPutLock {
			a, id = protocol.AdminLockCreate, c.Lock.ID
		}
		return adminObject{a, id, c.Lock.Tenant, func(s *State) string { return stateHash(s.Locks[id]) }, func(s *State) string {
			if l := s.Locks[id]; l != nil {
				return l.Tenant
			}
			return ""
		}}, err
	}
	return adminObject{}, fmt.Errorf("%s is not an admin change", t)
}

// stateHash is the SHA-256 of the canonical JSON of v, or "" for a nil
// pointer (what does not exist).
func stateHash(v any) string {
	b, err := json.Marshal(v, json.Deterministic(true))
	if err == nil && string(b) == "null" {
		return ""
	}
	if err == nil {
		b, err = protocol.Canonicalize(b)
	}
	if err != nil {
		panic(fmt.Sprintf("fsm: hashing an admin object: %v", err))
	}
	return protocol.HashBytes(b)
}

// applyAdmin applies an admin change and records it.
func (f *FSM) applyAdmin(index uint64, c *AdminCmd) (Result, []string) {
	if c.Type == MsgAdmin || c.Type == MsgGroup {
		panic(fmt.Sprintf("fsm: an admin entry at index %d wraps %s", index, c.Type))
	}
	obj, err := adminObjectOf(c.Type, c.Cmd)
	if err != nil {
		panic(fmt.Sprintf("fsm: cannot decode the admin change at index %d: %v", index, err))
	}
	before := obj.state(f.state)
	tenant := obj.tenant
	if tenant == "" && obj.owner != nil {
		tenant = obj.owner(f.state)
	}
	res, changed := f.apply(index, c.Type, c.Cmd)
	if res.Err != nil {
		return res, changed
	}
	after := obj.state(f.state)
	f.noteAuthChange(index, c, before != after)
	if f.ledger == nil || before == after {
		// Nothing changed (the same settings put again, a delete of what
		// does not exist): nothing to record.
		return res, changed
	}
	if tenant == "" && obj.owner != nil {
		tenant = obj.owner(f.state)
	}
	f.advance(c.At)
	e := &protocol.AdminEntry{Type: protocol.AdminEntryType, Index: f.state.Receipts, Actor: c.Actor,
		Action: obj.action, Object: obj.object, Tenant: tenant, Before: before, After: after,
		RecordedAt: protocol.FormatTime(f.state.Clock)}
	leaf, err := e.Leaf()
	if err != nil {
		// The change is committed and applied on every replica: its record
		// must not stop the FSM. An actor or object the entry cannot carry
		// as it is (none the API accepts) is recorded by its hash.
		e.Actor, e.Object = protocol.HashBytes([]byte(e.Actor)), protocol.HashBytes([]byte(e.Object))
		if leaf, err = e.Leaf(); err != nil {
			return res, changed
		}
	}
	f.recorder().putLeaf(int64(e.Index), leaf)
	f.state.Receipts++
	f.state.Admin = append(f.state.Admin, e.Index)
	if n := len(f.state.Admin) - MaxAdminEntries; n > 0 {
		f.state.Admin = append([]uint64(nil), f.state.Admin[n:]...)
	}
	return res, changed
}

// AdminEntries returns the ledger indexes of the newest admin entries,
// newest first: at most limit (all kept when limit ≤ 0), and only those
// below before when before > 0.
func (rd Reader) AdminEntries(before uint64, limit int) []uint64 {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	var out []uint64
	for i := len(rd.f.state.Admin) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		if ix := rd.f.state.Admin[i]; before == 0 || ix < before {
			out = append(out, ix)
		}
	}
	return out
}
