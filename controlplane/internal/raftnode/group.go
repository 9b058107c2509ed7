package raftnode

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/writhq/writ/controlplane/internal/fsm"
)

// GroupConfig bounds group commit: how many commands one entry carries, how
// large it grows, and how many group entries may wait for commit at once.
// While that many wait, new proposals queue, and the next entry takes all of
// them: the busier the leader, the larger its groups. A proposal waits for
// nothing else: when fewer entries are in flight it goes at once, alone.
type GroupConfig struct {
	MaxCommands int // commands per entry, at most fsm.MaxGroup
	MaxBytes    int // bytes per entry; a larger command goes alone
	InFlight    int // group entries proposed and not yet applied
}

// DefaultGroupConfig groups up to 512 commands or 1 MiB per entry, with two
// entries in flight.
func DefaultGroupConfig() GroupConfig {
	return GroupConfig{MaxCommands: 512, MaxBytes: 1 << 20, InFlight: 2}
}

// Validate reports a configuration that cannot run.
func (c GroupConfig) Validate() error {
	if c.MaxCommands < 1 || c.MaxCommands > fsm.MaxGroup || c.MaxBytes < 1 || c.InFlight < 1 {
		return errors.New("raftnode: group commit needs 1 to fsm.MaxGroup commands, a positive size and at least one entry in flight")
	}
	return nil
}

// applier is the part of *raft.Raft the grouper uses; tests replace it.
type applier interface {
	Apply(cmd []byte, timeout time.Duration) raft.ApplyFuture
}

// grouper collects the commands proposed through Node.Propose into group
// entries (fsm.MsgGroup).
type grouper struct {
	r     applier
	cfg   GroupConfig
	in    chan *proposal
	slots chan struct{} // one per group entry in flight
	stop  chan struct{}
	done  chan struct{}
	// mu makes closing and sending exclusive, so that nothing is sent once
	// the grouper has stopped taking proposals.
	mu     sync.RWMutex
	closed bool
	sent   atomic.Int64 // proposals that entered the queue (tests wait on it)
	// entries and commands count what was proposed.
	entries, commands atomic.Uint64
	// observe, when set, is told the size of every entry proposed.
	observe func(commands int)
	// beacon, when set, is told of every entry proposed and applied.
	beacon *commitBeacon
}

// proposal is one proposer's commands: one, or several that must share an
// entry (ProposeTogether), in order.
type proposal struct {
	cmds [][]byte
	size int
	out  chan outcome // buffered: the grouper never waits for a proposer
}

type outcome struct {
	res   []fsm.Result // one per command
	index uint64
	err   error
}

func newGrouper(r applier, cfg GroupConfig) *grouper {
	g := &grouper{r: r, cfg: cfg, in: make(chan *proposal, 2*cfg.MaxCommands), slots: make(chan struct{}, cfg.InFlight),
		stop: make(chan struct{}), done: make(chan struct{})}
	go g.run()
	return g
}

// run takes the first waiting proposal, waits for a free slot, then takes
// every proposal that queued meanwhile, up to the limits, and proposes them
// as one entry.
func (g *grouper) run() {
	defer close(g.done)
	var next *proposal // taken, but over the size left in the last entry
	for {
		first := next
		next = nil
		if first == nil {
			select {
			case first = <-g.in:
			case <-g.stop:
				return
			}
		}
		select {
		case g.slots <- struct{}{}:
		case <-g.stop:
			first.out <- outcome{err: raft.ErrRaftShutdown}
			return
		}
		group, size, count := []*proposal{first}, first.size, len(first.cmds)
	fill:
		for count < g.cfg.MaxCommands {
			select {
			case p := <-g.in:
				if size+p.size > g.cfg.MaxBytes || count+len(p.cmds) > g.cfg.MaxCommands {
					next = p
					break fill
				}
				group, size, count = append(group, p), size+p.size, count+len(p.cmds)
			default:
				break fill
			}
		}
		g.propose(group)
	}
}

// propose puts one entry through Raft and, from another goroutine, tells
// each proposer its own result once the entry is applied here.
func (g *grouper) propose(group []*proposal) {
	var data []byte
	count := 0
	for _, p := range group {
		count += len(p.cmds)
	}
	if count == 1 {
		data = group[0].cmds[0] // alone, an entry of its own
	} else {
		cmds := make([][]byte, 0, count)
		for _, p := range group {
			cmds = append(cmds, p.cmds...)
		}
		var err error
		if data, err = fsm.EncodeGroup(cmds); err != nil {
			<-g.slots
			for _, p := range group {
				p.out <- outcome{err: err}
			}
			return
		}
	}
	g.entries.Add(1)
	g.commands.Add(uint64(count))
	if g.observe != nil {
		g.observe(count)
	}
	if g.beacon != nil {
		g.beacon.begin()
	}
	fut := g.r.Apply(data, 10*time.Second)
	go func() {
		err := fut.Error()
		if g.beacon != nil {
			g.beacon.end(err == nil)
		}
		<-g.slots
		if err != nil {
			for _, p := range group {
				p.out <- outcome{err: err}
			}
			return
		}
		idx := fut.Index()
		switch res := fut.Response().(type) {
		case fsm.Result:
			if count == 1 {
				group[0].out <- outcome{res: []fsm.Result{res}, index: idx}
				return
			}
		case []fsm.Result:
			if len(res) == count {
				for _, p := range group {
					p.out <- outcome{res: res[:len(p.cmds):len(p.cmds)], index: idx}
					res = res[len(p.cmds):]
				}
				return
			}
		}
		for _, p := range group {
			p.out <- outcome{err: errResponse}
		}
	}()
}

var errResponse = errors.New("raftnode: the FSM answered a grouped entry with another shape")

// send queues p, unless the grouper is closed or ctx ends first.
func (g *grouper) send(ctx context.Context, p *proposal) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return raft.ErrRaftShutdown
	}
	select {
	case g.in <- p:
		g.sent.Add(1)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close stops taking proposals; those queued are refused. Entries already
// proposed are answered when Raft applies them or shuts down.
func (g *grouper) close() {
	g.mu.Lock() // waits for senders, whom run still serves
	g.closed = true
	g.mu.Unlock()
	close(g.stop)
	<-g.done
	for {
		select {
		case p := <-g.in:
			p.out <- outcome{err: raft.ErrRaftShutdown}
		default:
			return
		}
	}
}

// GroupStats returns how many entries Propose has put through Raft on this
// server, and how many commands they carried.
func (n *Node) GroupStats() (entries, commands uint64) {
	return n.group.entries.Load(), n.group.commands.Load()
}

// Propose puts one command through Raft grouped with the commands proposed
// concurrently (group commit), and waits until it is applied here. Its
// result and durability are exactly those of Apply: the command is committed
// by a quorum, each of which has fsynced it, before Propose returns; it is
// applied after every command whose Apply or Propose returned before this
// call. ctx bounds only the wait to enter the queue: once queued, the command
// may commit, and Propose waits to say so.
func (n *Node) Propose(ctx context.Context, t fsm.MsgType, cmd any) (fsm.Result, uint64, error) {
	res, index, err := n.ProposeTogether(ctx, Command{Type: t, Cmd: cmd})
	if err != nil {
		return fsm.Result{}, 0, err
	}
	return res[0], index, nil
}

// Command is one command of ProposeTogether.
type Command struct {
	Type fsm.MsgType
	Cmd  any
}

// ProposeTogether proposes cmds as Propose does one, all in the same entry
// (with whatever else is proposed concurrently), applied one after the other
// in the order given, each exactly as if it were an entry of its own: they
// commit together or not at all, at the cost of one Raft round and one fsync
// on each server instead of one per command. It returns one result per
// command. At most MaxCommands commands, which must fit MaxBytes together.
func (n *Node) ProposeTogether(ctx context.Context, cmds ...Command) ([]fsm.Result, uint64, error) {
	if len(cmds) == 0 || len(cmds) > n.group.cfg.MaxCommands {
		return nil, 0, errors.New("raftnode: ProposeTogether takes 1 to MaxCommands commands")
	}
	p := &proposal{cmds: make([][]byte, len(cmds)), out: make(chan outcome, 1)}
	for i, c := range cmds {
		data, err := fsm.Encode(c.Type, c.Cmd)
		if err != nil {
			return nil, 0, err
		}
		p.cmds[i], p.size = data, p.size+len(data)
	}
	if len(cmds) > 1 && p.size > n.group.cfg.MaxBytes {
		return nil, 0, errors.New("raftnode: commands proposed together are larger than one group entry may be")
	}
	if err := n.group.send(ctx, p); err != nil {
		return nil, 0, err
	}
	o := <-p.out
	if o.err != nil {
		if errors.Is(o.err, raft.ErrNotLeader) || errors.Is(o.err, raft.ErrLeadershipLost) {
			return nil, 0, ErrNotLeader
		}
		return nil, 0, o.err
	}
	return o.res, o.index, nil
}
