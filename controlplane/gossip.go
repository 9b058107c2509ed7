package controlplane

import (
	"bytes"
	"fmt"
	stdlog "log"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/writhq/writ/controlplane/internal/keyring"
	"github.com/writhq/writ/internal/jsonx"
)

// memberMeta is what a server tells the others about itself in memberlist's
// node metadata (at most 512 bytes).
type memberMeta struct {
	V      int    `json:"v"`
	ID     string `json:"id"`
	Raft   string `json:"raft"`
	API    string `json:"api"`
	Expect int    `json:"expect"`
	// State is set once the server holds Raft state (it is in a cluster): a
	// cluster that exists is never bootstrapped again.
	State bool `json:"state"`
}

// gossip is this server's memberlist: who the servers are and where their
// Raft and API listen. Nothing learnt here is trusted for safety: Raft's own
// mutual TLS decides who may be a peer.
type gossip struct {
	ml  *memberlist.Memberlist
	log *slog.Logger

	mu   sync.Mutex
	self memberMeta

	// view is memberlist's table of nodes as its events last told it, one
	// copy per name. memberlist.Members returns pointers into the table it
	// keeps updating, so reading a node's state or metadata from them races
	// with its own goroutines; its events are called under its lock, with the
	// node as it stands.
	viewMu sync.Mutex
	view   map[string][]byte // name → metadata, of the nodes alive
	// known is every server memberlist ever reported alive, as it last
	// did, dead or not since: where it listens (member) and where to join
	// it again (rejoin).
	known  map[string]knownServer
	events memberlist.EventDelegate
}

// knownServer is a server's metadata and gossip address as memberlist last
// reported it alive.
type knownServer struct {
	meta []byte
	addr string
}

// gossipKeySize is memberlist's AES-256-GCM key, derived from the keyring.
const gossipKeySize = 32

func startGossip(cl ClusterConfig, self memberMeta, kr *keyring.Keyring, log *slog.Logger, events memberlist.EventDelegate) (*gossip, error) {
	return startGossipOn(cl, self, kr, log, events, nil)
}

// startGossipOn is startGossip over transport, or memberlist's network
// transport when it is nil (tests cut a transport to partition the gossip).
func startGossipOn(cl ClusterConfig, self memberMeta, kr *keyring.Keyring, log *slog.Logger, events memberlist.EventDelegate, transport memberlist.Transport) (*gossip, error) {
	host, port, err := net.SplitHostPort(cl.GossipAddr)
	if err != nil {
		return nil, err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("controlplane: gossip port %q", port)
	}
	g := &gossip{log: log, self: self, view: map[string][]byte{}, known: map[string]knownServer{}, events: events}
	mc := memberlist.DefaultLANConfig()
	mc.Name = self.ID
	mc.BindAddr, mc.BindPort = host, p
	mc.AdvertisePort = p
	// Every message and stream is sealed with a key only holders of the
	// cluster keyring can derive; a stranger can neither read nor join.
	mc.SecretKey = kr.Derive("gossip", gossipKeySize)
	mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	mc.Delegate = g
	mc.Events = g
	mc.Logger = stdlog.New(gossipLog{log}, "", 0)
	if transport != nil {
		mc.Transport = transport
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("controlplane: gossip on %s: %w", cl.GossipAddr, err)
	}
	g.ml = ml
	return g, nil
}

// members returns the servers memberlist believes alive, with their metadata,
// ordered by id. A node memberlist suspects stays a member until it is
// declared dead: suspicion raises no event.
func (g *gossip) members() []memberMeta {
	g.viewMu.Lock()
	defer g.viewMu.Unlock()
	var out []memberMeta
	for name, meta := range g.view {
		if m, ok := parseMeta(name, meta); ok {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b memberMeta) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// NotifyJoin, NotifyLeave and NotifyUpdate are memberlist.EventDelegate:
// memberlist calls them holding its lock on the node table. The node's state
// is in the event, not in the node given (memberlist keeps it in a field of
// its own that shadows Node.State): a join or an update is a node alive, a
// leave one dead or gone.
func (g *gossip) NotifyJoin(n *memberlist.Node) {
	g.note(n, true)
	g.events.NotifyJoin(n)
}

func (g *gossip) NotifyLeave(n *memberlist.Node) {
	g.note(n, false)
	g.events.NotifyLeave(n)
}

func (g *gossip) NotifyUpdate(n *memberlist.Node) {
	g.note(n, true)
	g.events.NotifyUpdate(n)
}

// note copies a node memberlist reports alive into the view, or forgets one
// it reports dead or gone.
func (g *gossip) note(n *memberlist.Node, alive bool) {
	g.viewMu.Lock()
	defer g.viewMu.Unlock()
	if !alive {
		delete(g.view, n.Name)
		return
	}
	g.view[n.Name] = bytes.Clone(n.Meta)
	g.known[n.Name] = knownServer{meta: g.view[n.Name], addr: n.Address()}
}

func parseMeta(name string, meta []byte) (memberMeta, bool) {
	var m memberMeta
	if jsonx.UnmarshalLenient(meta, &m) != nil || m.V != 1 || m.ID != name {
		return memberMeta{}, false
	}
	return m, true
}

// member returns server id's metadata: as memberlist reports it alive, or
// else as it last did. Raft, not memberlist, says who leads: a leader that
// memberlist declared dead (it was cut off longer than the suspicion
// timeout, and memberlist has not seen it since) still listens where it
// did, and a follower relaying a node's result or forwarding a submission
// must still reach it there. Only a server memberlist never saw is unknown.
func (g *gossip) member(id string) (memberMeta, bool) {
	g.viewMu.Lock()
	defer g.viewMu.Unlock()
	if meta, ok := g.view[id]; ok {
		return parseMeta(id, meta)
	}
	if k, ok := g.known[id]; ok {
		return parseMeta(id, k.meta)
	}
	return memberMeta{}, false
}

// rejoin joins again, at the gossip address each last had, the servers of
// ids that memberlist does not see alive, and returns how many answered.
// memberlist never probes a server it declared dead, and its push-pull only
// goes to servers it sees alive: after a partition longer than the
// suspicion timeout, each side would hold the other dead for good, however
// well the network and Raft have healed. A join exchanges the full state
// both ways; a server that learns it is held dead refutes it with a higher
// incarnation, which the next join carries back, so a second round at the
// latest revives both sides.
func (g *gossip) rejoin(ids []string) (int, error) {
	g.viewMu.Lock()
	var addrs []string
	for _, id := range ids {
		if _, alive := g.view[id]; alive || id == g.self.ID {
			continue
		}
		if k, ok := g.known[id]; ok && k.addr != "" {
			addrs = append(addrs, k.addr)
		}
	}
	g.viewMu.Unlock()
	if len(addrs) == 0 {
		return 0, nil
	}
	return g.ml.Join(addrs)
}

// setState marks this server as holding Raft state and tells the others.
func (g *gossip) setState() {
	g.mu.Lock()
	changed := !g.self.State
	g.self.State = true
	g.mu.Unlock()
	if changed {
		if err := g.ml.UpdateNode(5 * time.Second); err != nil {
			g.log.Warn("gossip: updating metadata", "err", err)
		}
	}
}

func (g *gossip) close() {
	g.ml.Leave(2 * time.Second)
	g.ml.Shutdown()
}

// NodeMeta is memberlist.Delegate: this server's metadata.
func (g *gossip) NodeMeta(limit int) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, _ := jsonx.Marshal(g.self)
	if len(b) > limit {
		g.log.Error("gossip: metadata over the limit", "bytes", len(b), "limit", limit)
		return nil
	}
	return b
}

func (g *gossip) NotifyMsg([]byte)                           {}
func (g *gossip) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (g *gossip) LocalState(join bool) []byte                { return nil }
func (g *gossip) MergeRemoteState(buf []byte, join bool)     {}

// gossipLog passes memberlist's log lines to slog, dropping its debug chatter.
type gossipLog struct{ log *slog.Logger }

func (l gossipLog) Write(p []byte) (int, error) {
	line := bytes.TrimSpace(p)
	switch {
	case bytes.Contains(line, []byte("[DEBUG]")):
	case bytes.Contains(line, []byte("[ERR]")):
		l.log.Error(string(line))
	case bytes.Contains(line, []byte("[WARN]")):
		l.log.Warn(string(line))
	default:
		l.log.Info(string(line))
	}
	return len(p), nil
}
