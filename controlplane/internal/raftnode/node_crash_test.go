package raftnode

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/pki"
	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/protocol"
)

// TestNodeCrash: a real single-server Raft node (hashicorp/raft on LogStore,
// file snapshots) in a child process admits intents as fast as it can while
// taking a snapshot every 32 entries and keeping 16 entries behind each (so
// that snapshots, prefix compaction and appends overlap), and is killed with
// SIGKILL at a random moment, 15 times (3 under -short). Each start is the check: the child
// must come up on the data directory, win its election, and find in its FSM
// every intent any child before it was told was applied.
func TestNodeCrash(t *testing.T) {
	t.Parallel()
	if dir := os.Getenv(nodeCrashEnv); dir != "" {
		nodeCrashChild(t, dir, os.Getenv(nodeCrashEnv+"_ACKED"))
		return
	}
	dir := t.TempDir()
	ackedFile := filepath.Join(t.TempDir(), "acked")
	var acked []string
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 17))
	kills := testtier.Rounds(15, 3)
	for kill := 0; kill <= kills; kill++ {
		if err := os.WriteFile(ackedFile, []byte(strings.Join(acked, "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestNodeCrash$")
		cmd.Env = append(os.Environ(), nodeCrashEnv+"="+dir, nodeCrashEnv+"_ACKED="+ackedFile)
		cmd.ExtraFiles = []*os.File{w}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		up := make(chan string, 1)
		lines := make(chan []string, 1)
		go func() {
			var got []string
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				if l := sc.Text(); strings.HasPrefix(l, "up ") {
					up <- l
				} else {
					got = append(got, l)
				}
			}
			close(up)
			lines <- got
		}()
		select {
		case l, ok := <-up:
			if !ok {
				cmd.Wait()
				t.Fatalf("start %d: the node did not come up: %s", kill, stderr.String())
			}
			if want := fmt.Sprintf("up %d", len(acked)); l != want {
				t.Fatalf("start %d: %q, want %q", kill, l, want)
			}
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
			t.Fatalf("start %d: the node did not come up within 2 minutes", kill)
		}
		if kill < kills {
			time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		got := <-lines
		r.Close()
		for _, l := range got {
			if id, ok := strings.CutPrefix(l, "ok "); ok {
				acked = append(acked, id)
			}
		}
	}
	if len(acked) < kills {
		t.Fatalf("only %d intents applied over %d runs", len(acked), kills)
	}
	// The runs took snapshots and compacted the log behind them.
	snaps, _ := filepath.Glob(filepath.Join(dir, "raft", "snapshots", "*", "state.bin"))
	s, err := OpenLogStore(LogStorePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	s.Close()
	if len(snaps) == 0 || first <= 1 {
		t.Fatalf("%d snapshots, log from %d: the runs did not snapshot and compact", len(snaps), first)
	}
	t.Logf("%d kills; %d intents applied before them, all found at every start; log %d..%d at the end, %d snapshots kept",
		kills, len(acked), first, last, len(snaps))
}

const nodeCrashEnv = "WRIT_NODE_CRASH_CHILD"

func nodeCrashChild(t *testing.T, dir, ackedFile string) {
	out := os.NewFile(3, "acks")
	ca := newTestCA(t)
	f, err := fsm.New(fsm.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := Start(Config{
		ID: "s1", Dir: dir, Bind: "127.0.0.1:0", TLS: ca.tls(t, pki.RoleServer, "s1"), Bootstrap: true, Logger: quiet(),
		HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond, LeaderLeaseTimeout: 100 * time.Millisecond,
		SnapshotThreshold: 32, SnapshotInterval: 20 * time.Millisecond, TrailingLogs: 16,
	}, f)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := n.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Raft.Barrier(time.Minute).Error(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ackedFile)
	if err != nil {
		t.Fatal(err)
	}
	var acked []string
	if len(b) > 0 {
		acked = strings.Split(string(b), "\n")
	}
	for _, id := range acked {
		if _, ok := f.Reader().Intent(id); !ok {
			t.Fatalf("intent %s, applied before a kill, is not in the FSM", id)
		}
	}
	fmt.Fprintf(out, "up %d\n", len(acked))
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for i := 0; ; i++ {
		id := fmt.Sprintf("crash-%d-%d", os.Getpid(), i)
		cmd := &fsm.Admit{
			At: at, Intent: []byte(`{}`), ID: id, Tenant: "acme", Principal: "bot", RunID: "run", Tool: "echo",
			PayloadHash: protocol.HashBytes([]byte(id)), IdempotencyKey: id, ExpiresAt: at.Add(10 * time.Minute),
			Decision: fsm.Decision{Allow: true},
		}
		if _, _, err := n.Propose(ctx, fsm.MsgAdmit, cmd); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(out, "ok %s\n", id)
	}
}
