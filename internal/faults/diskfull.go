package faults

import (
	"context"
	"errors"
	"fmt"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/protocol"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// dataSize is the size of the tmpfs each server's data directory is on: far
// above what a run writes, so that only FillDisk fills it. tmpfs takes
// memory only for what is written.
const dataSize = 1 << 30

// MountData puts each server's data directory on a tmpfs of its own, so
// that FillDisk can fill one server's disk and no other's. It must be
// called in the mount namespace the servers are started from (the inner
// test process: `ip netns exec` gave it one of its own), before they start;
// the mounts go with that namespace.
func (c *Cluster) MountData() error {
	for _, s := range ServerNames {
		dir := filepath.Join(c.cfg.Dir, s)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", dataSize)); err != nil {
			return fmt.Errorf("faults: tmpfs on %s: %w", dir, err)
		}
	}
	c.tmpfs = true
	return nil
}

// FillDisk fills server i's data directory to the brim: its tmpfs is made
// as small as what it holds, and a file takes what is left. free gives the
// space back.
func (c *Cluster) FillDisk(i int) (free func() error, err error) {
	if !c.tmpfs {
		return nil, errors.New("faults: the data directories are not on tmpfs (MountData)")
	}
	dir := filepath.Join(c.cfg.Dir, ServerNames[i])
	fill := filepath.Join(dir, "disk-full")
	free = func() error {
		if err := os.Remove(fill); err != nil && !os.IsNotExist(err) {
			return err
		}
		return syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d", dataSize))
	}
	// The server writes meanwhile: a size under what it holds by then is
	// refused (EINVAL), and is tried again.
	for try := 0; ; try++ {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			return nil, err
		}
		used := (st.Blocks - st.Bfree) * uint64(st.Bsize)
		err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d", used+64<<10))
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EINVAL) || try == 50 {
			return nil, fmt.Errorf("faults: shrinking %s's tmpfs: %w", dir, err)
		}
	}
	f, err := os.OpenFile(fill, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		free()
		return nil, err
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return free, nil
			}
			free()
			return nil, err
		}
	}
}

// diskFull fills the leader's disk for hold (at least until the cluster
// has gone on without it): it can append nothing to its Raft log or
// ledger. The cluster must go on — another leader, submissions answered —
// and the server must recover once the space is back, with its data
// intact: the checks after the scenario compare its ledger with the
// others'.
func diskFull(hold time.Duration) func(context.Context, *Suite, *Load, *Report) error {
	return func(ctx context.Context, s *Suite, l *Load, r *Report) error {
		leader, err := s.C.WaitLeader(ctx, 60*time.Second)
		if err != nil {
			return err
		}
		s.waitAcked(l, 15)
		p := s.C.Servers[leader]
		s.Logf("nemesis: fill the leader %s's disk for %s", p.Name, hold)
		free, err := s.C.FillDisk(leader)
		if err != nil {
			return err
		}
		r.Faults++
		began, acked := time.Now(), l.Acked.Load()
		if other, err := s.newLeader(ctx, leader, hold+20*time.Second); err != nil {
			r.problem("no server but %s led while its disk was full: %v", p.Name, err)
		} else {
			s.Logf("nemesis: %s leads after %s", ServerNames[other], time.Since(began).Round(time.Millisecond))
			s.waitAcked(l, 10)
			if l.Acked.Load()-acked < 10 {
				r.problem("the cluster answered %d submissions in 30 s while %s's disk was full", l.Acked.Load()-acked, p.Name)
			}
			probeFullServer(ctx, s, l, r, leader)
		}
		time.Sleep(time.Until(began.Add(hold)))
		s.Logf("nemesis: %d submissions answered in %s while %s's disk was full; space again", l.Acked.Load()-acked,
			time.Since(began).Round(time.Millisecond), p.Name)
		if err := free(); err != nil {
			return err
		}
		s.Logf("nemesis: %s's log: %s", p.Name, diskFullLog(p))
		if !p.Running() {
			r.problem("%s exited on a full disk:\n%s", p.Name, Excerpt(p))
			return p.Start()
		}
		return nil
	}
}

// diskFullLog counts what server p's log says of its full disk: refused
// Raft appends, waits of its FSM for space, leadership handed on, and node
// sessions sent to another server.
func diskFullLog(p *Proc) string {
	b, _ := os.ReadFile(p.log)
	log := string(b)
	return fmt.Sprintf("%d Raft appends refused, %d waits for space, %d leadership hand-offs, %d sweeps of node sessions",
		strings.Count(log, "unable to store logs within log store")+strings.Count(log, "failed to commit logs"),
		strings.Count(log, `"msg":"the disk is full: waiting for space`), strings.Count(log, `"msg":"the disk is full: handed the leadership on"`),
		strings.Count(log, `"msg":"the disk is full: node sessions sent to another server"`))
}

// probeFullServer submits intents straight to server i, whose disk is full
// and which no longer leads, each waiting up to 10 s for its final state.
// Such a server cannot keep up with the cluster: it must refuse at once
// (503 no_leader, so that clients go elsewhere), or answer, but never hold
// a request until the caller gives up. It must also come to say so: at
// least one refusal names its full disk.
func probeFullServer(ctx context.Context, s *Suite, l *Load, r *Report, i int) {
	cl := s.C.Client(i)
	cl.Failover = 0
	defer cl.CloseIdleConnections()
	const wait, n = 10 * time.Second, 10
	var slow, full int
	answers := map[string]int{}
	for k := range n {
		key := fmt.Sprintf("%s-diskfull-%02d", l.prefix, k)
		began := time.Now()
		_, err := l.onceErr(ctx, cl, key, key+"-a", "", "", wait+5*time.Second, wait)
		took := time.Since(began)
		var ae *client.Error
		switch {
		case err == nil:
			answers["answered"]++
		case errors.As(err, &ae):
			answers[string(ae.Code)]++
			if ae.Code == protocol.CodeNoLeader && strings.Contains(ae.Message, "disk is full") {
				full++
			}
		default:
			answers["no answer"]++
		}
		if took >= wait*8/10 {
			slow++
		}
		time.Sleep(300 * time.Millisecond)
	}
	s.Logf("nemesis: %d submissions straight to %s while its disk was full: %v; %d took over %s", n, ServerNames[i], answers, slow, wait*8/10)
	if slow > 0 {
		r.problem("%d of %d submissions to %s, whose disk was full, took over %s (a server that cannot keep up must refuse at once): %v", slow, n, ServerNames[i], wait*8/10, answers)
	}
	if full == 0 {
		r.problem("no submission to %s, whose disk was full, was refused for it: %v", ServerNames[i], answers)
	}
}
