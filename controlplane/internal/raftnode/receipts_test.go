package raftnode

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/pki"
	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/ledger"
)

// replica is a Raft server with a receipt log on disk, as a control-plane
// server opens it: fsync deferred to Sync.
type replica struct {
	id, dir, ledgerDir string
	store              *ledger.DiskStore
	log                *ledger.Log
	*Node
}

func startReplica(t *testing.T, ca *testCA, id, dir, ledgerDir, bind string, bootstrap bool) *replica {
	t.Helper()
	store, err := ledger.OpenDisk(ledger.DiskConfig{Dir: ledgerDir, DeferSync: true, Logger: quiet()})
	if err != nil {
		t.Fatalf("%s: receipt store: %v", id, err)
	}
	lg, err := ledger.Open(context.Background(), store, ledger.Config{FullCheck: true})
	if err != nil {
		store.Close()
		t.Fatalf("%s: receipt log: %v", id, err)
	}
	f, err := fsm.New(fsm.DefaultConfig(), lg)
	if err != nil {
		t.Fatal(err)
	}
	n, err := Start(Config{
		ID: id, Dir: dir, Bind: bind, TLS: ca.tls(t, pki.RoleServer, id), Bootstrap: bootstrap,
		// The lease as long as Raft allows (its heartbeat timeout): a leader
		// starved on a loaded machine keeps its place twice as long.
		Logger: quiet(), HeartbeatTimeout: time.Second, ElectionTimeout: time.Second,
		LeaderLeaseTimeout: time.Second,
	}, f)
	if err != nil {
		store.Close()
		t.Fatalf("start %s: %v", id, err)
	}
	r := &replica{id: id, dir: dir, ledgerDir: ledgerDir, store: store, log: lg, Node: n}
	t.Cleanup(func() { r.stop() })
	return r
}

// stop shuts Raft down and closes the store, once.
func (r *replica) stop() {
	if r.Node != nil {
		r.Shutdown()
		r.store.Close()
		r.Node = nil
	}
}

// crash stops Raft and leaves the store as a crash would: what was synced,
// and the unsynced appends after it as excess that the head does not cover.
// The store's directory is copied while the store is still open, so nothing
// is synced on the way; the copy is the replica's store from then on.
func (r *replica) crash(t *testing.T) {
	t.Helper()
	if err := r.Shutdown(); err != nil {
		t.Fatal(err)
	}
	crashed := t.TempDir()
	for _, name := range []string{"head", "leaves.dat", "leaves.idx", "hashes.dat"} {
		b, err := os.ReadFile(filepath.Join(r.ledgerDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r.store.Close()
	r.Node, r.ledgerDir = nil, crashed
}

func deniedCmd(i int) *fsm.Admit {
	a := admitCmd(i)
	a.Decision = fsm.Decision{PolicyHash: "sha256:p"} // denied at once: a receipt
	return a
}

// waitApplied waits until r has applied index.
func waitApplied(t *testing.T, r *replica, index uint64) {
	t.Helper()
	eventually.NoError(t, fmt.Sprintf("%s to apply %d", r.id, index), func() error {
		if got := r.FSM.Reader().Index(); got < index {
			return fmt.Errorf("applied %d", got)
		}
		return nil
	})
}

// sameLedger checks that r holds the leader's receipts byte for byte, with
// the same root.
func sameLedger(t *testing.T, leader, r *replica) {
	t.Helper()
	n := leader.log.Size()
	if r.log.Size() != n {
		t.Fatalf("%s holds %d receipts, the leader %d", r.id, r.log.Size(), n)
	}
	want, err := leader.store.ReadLeaves(0, int(n))
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.store.ReadLeaves(0, int(n))
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s's receipt %d differs from the leader's:\n%s\n%s", r.id, i, got[i], want[i])
		}
	}
	a, _ := leader.log.Root(n)
	b, _ := r.log.Root(n)
	if a != b {
		t.Fatalf("%s's root %s, the leader's %s", r.id, b, a)
	}
}

// headOf reads the size the head file in dir holds.
func headOf(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "head"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	if _, err := fmt.Sscanf(string(b), "writ-ledger-head v1\n%d\n", &n); err != nil {
		t.Fatalf("head %q: %v", b, err)
	}
	return n
}

// TestRestartRebuildsLostReceipts: a follower whose receipt store lost the
// receipts it had not synced rebuilds them on restart, from its Raft snapshot
// and log: the same leaves, byte for byte, and the same root as the leader.
// First a crash as it happens (the store at its last sync, the snapshot's
// Persist; the unsynced appends after it on disk but not in the head), then
// a store further behind, below the snapshot's receipts.
func TestRestartRebuildsLostReceipts(t *testing.T) {
	ca := newTestCA(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := startReplica(t, ca, "s1", t.TempDir(), t.TempDir(), "127.0.0.1:0", true)
	if _, err := a.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	var reps []*replica
	for _, id := range []string{"s2", "s3"} {
		r := startReplica(t, ca, id, t.TempDir(), t.TempDir(), "127.0.0.1:0", false)
		if err := a.Raft.AddVoter(raft.ServerID(id), r.Addr(), 0, 10*time.Second).Error(); err != nil {
			t.Fatalf("add %s: %v", id, err)
		}
		reps = append(reps, r)
	}
	c := reps[1]
	next := 0
	admit := func(n int) uint64 {
		var last uint64
		for ; n > 0; n-- {
			res, idx, err := a.Apply(ctx, fsm.MsgAdmit, deniedCmd(next))
			if err != nil || res.Err != nil {
				t.Fatalf("apply %d: %v %+v", next, err, res.Err)
			}
			next++
			last = idx
		}
		return last
	}
	waitApplied(t, c, admit(30))
	if err := c.Raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, c, admit(30))
	if a.log.Size() != 60 {
		t.Fatalf("the leader holds %d receipts, want 60", a.log.Size())
	}
	addr := string(c.Addr())

	c.crash(t)
	if got := headOf(t, c.ledgerDir); got < 30 || got >= 60 {
		t.Fatalf("crashed store's head says %d: want the 30 of the snapshot's sync, and fewer than the 60 appended", got)
	}
	c = startReplica(t, ca, "s3", c.dir, c.ledgerDir, addr, false)
	last := admit(5)
	waitApplied(t, c, last)
	sameLedger(t, a, c)
	waitApplied(t, reps[0], last)
	sameLedger(t, a, reps[0])

	// Further behind: the store at 10 of the snapshot's 30 receipts.
	c.stop()
	if err := os.WriteFile(filepath.Join(c.ledgerDir, "head"), fmt.Appendf(nil, "writ-ledger-head v1\n%019d\n", 10), 0o600); err != nil {
		t.Fatal(err)
	}
	c = startReplica(t, ca, "s3", c.dir, c.ledgerDir, addr, false)
	waitApplied(t, c, admit(5))
	sameLedger(t, a, c)
	want, _ := a.FSM.Encode()
	if got, _ := c.FSM.Encode(); !bytes.Equal(got, want) {
		t.Fatal("the restarted follower's state differs from the leader's")
	}
}
