package controlplane

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/writhq/writ/controlplane/internal/pki"
)

// cluster runs discovery for a server: joining, bootstrap_expect, adding
// newly found servers as voters (leader only) and watching peers. Memberlist
// only says who might be there; Raft and its mutual TLS decide.
type cluster struct {
	s      *Server
	cfg    ClusterConfig
	g      *gossip
	wake   chan struct{}
	failed prometheus.Gauge
	// tlsCfg dials peers to check who answers at a Raft address.
	tlsCfg *tls.Config
	// http forwards writes to the leader's API, presenting this server's
	// certificate and accepting only a server of the cluster CA.
	http *http.Client
	// batches carries submissions to the leader (forwardbatch.go).
	batches *batcher
	// rejoining is set while rejoinVoters runs.
	rejoining atomic.Bool
}

// reconcileEvery is how often membership is compared with Raft's
// configuration even without a memberlist event.
const reconcileEvery = time.Second

func (s *Server) startCluster(tlsCfg *tls.Config) error {
	c := &cluster{s: s, cfg: s.cfg.Cluster, wake: make(chan struct{}, 1), tlsCfg: tlsCfg, batches: &batcher{s: s}}
	c.http = &http.Client{Transport: &http.Transport{
		TLSClientConfig: peerTLS(tlsCfg, ""), MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute,
		ForceAttemptHTTP2: false,
	}}
	c.failed = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "writ_cluster_peers_failed", Help: "Raft voters that memberlist does not see alive, as seen by this server.",
	})
	s.metrics.reg.MustRegister(c.failed)
	self := memberMeta{V: 1, ID: s.cfg.ID, Raft: string(s.node.Addr()), API: advertised(s.ln.Addr(), c.cfg.GossipAddr),
		Expect: c.cfg.BootstrapExpect, State: s.hasRaftState()}
	g, err := startGossip(c.cfg, self, s.keys, s.log, c)
	if err != nil {
		return err
	}
	c.g = g
	s.cluster = c
	s.done.Add(1)
	go c.run()
	if s.fleet != nil {
		s.done.Add(1)
		go s.sendAgentsAway()
	}
	return nil
}

// run joins, bootstraps when expected, and reconciles until Close.
func (c *cluster) run() {
	defer c.s.done.Done()
	joined := len(c.cfg.Join) == 0
	var lastRejoin time.Time
	t := time.NewTicker(reconcileEvery)
	defer t.Stop()
	for {
		if !joined {
			if n, err := c.g.ml.Join(c.cfg.Join); n > 0 {
				joined = true
				c.s.log.Info("gossip: joined", "servers", n)
			} else {
				c.s.log.Warn("gossip: no server to join answered; retrying", "join", c.cfg.Join, "err", err)
			}
		}
		if c.s.hasRaftState() {
			c.g.setState()
		} else if c.cfg.BootstrapExpect > 1 {
			c.maybeBootstrap()
		}
		if c.s.isLeader() {
			c.addNewServers()
		}
		if joined && time.Since(lastRejoin) >= rejoinEvery && c.rejoining.CompareAndSwap(false, true) {
			// A voter that is really down makes the join wait for its
			// dial timeout: not on this loop.
			lastRejoin = time.Now()
			go func() {
				defer c.rejoining.Store(false)
				c.rejoinVoters()
			}()
		}
		c.countFailed()
		select {
		case <-c.s.stop:
			c.g.close()
			return
		case <-t.C:
		case <-c.wake:
		}
	}
}

// maybeBootstrap forms the cluster when exactly BootstrapExpect servers with
// the same expectation and no Raft state see each other. Only the one with
// the lowest id bootstraps, with all of them as voters; the others receive
// the configuration from it through Raft. One writer of the first entry means
// no two servers can write different first configurations.
func (c *cluster) maybeBootstrap() {
	ms := c.g.members()
	for _, m := range ms {
		if m.State {
			return // a cluster exists; its leader adds this server
		}
		if m.Expect != c.cfg.BootstrapExpect {
			c.s.log.Warn("gossip: a server expects another cluster size; not bootstrapping", "server", m.ID, "expect", m.Expect, "mine", c.cfg.BootstrapExpect)
			return
		}
	}
	if len(ms) != c.cfg.BootstrapExpect {
		if len(ms) > c.cfg.BootstrapExpect {
			c.s.log.Error("gossip: more servers than bootstrap_expect; not bootstrapping", "seen", len(ms), "expect", c.cfg.BootstrapExpect)
		}
		return
	}
	slices.SortFunc(ms, func(a, b memberMeta) int { return strings.Compare(a.ID, b.ID) })
	if ms[0].ID != c.s.cfg.ID {
		return
	}
	var conf raft.Configuration
	for _, m := range ms {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(m.ID), Address: raft.ServerAddress(m.Raft)})
	}
	if err := c.s.node.Raft.BootstrapCluster(conf).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		c.s.log.Error("bootstrap", "err", err)
		return
	}
	c.s.log.Info("bootstrapped the cluster", "servers", len(ms))
	c.g.setState()
}

// addNewServers makes servers that memberlist found, and Raft does not know,
// voters — after checking that the server at that Raft address holds the
// certificate of the id it claims.
func (c *cluster) addNewServers() {
	f := c.s.node.Raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	known := map[raft.ServerID]bool{}
	for _, srv := range f.Configuration().Servers {
		known[srv.ID] = true
	}
	for _, m := range c.g.members() {
		if known[raft.ServerID(m.ID)] {
			continue
		}
		if len(known) >= 5 {
			c.s.log.Warn("gossip: the cluster has 5 voters; not adding another", "server", m.ID)
			return
		}
		if err := c.checkPeer(m); err != nil {
			c.s.log.Warn("gossip: not adding a server", "server", m.ID, "err", err)
			continue
		}
		if err := c.s.node.Raft.AddVoter(raft.ServerID(m.ID), raft.ServerAddress(m.Raft), f.Index(), 10*time.Second).Error(); err != nil {
			c.s.log.Warn("adding a voter", "server", m.ID, "err", err)
			return
		}
		c.s.log.Info("added a voter", "server", m.ID, "raft", m.Raft)
		return // the configuration changed; the next round sees the new one
	}
}

// checkPeer dials m's Raft address and requires the certificate of the
// cluster CA naming writ://server/<m.ID>.
func (c *cluster) checkPeer(m memberMeta) error {
	cfg := peerTLS(c.tlsCfg, m.ID)
	d := &net.Dialer{Timeout: 3 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", m.Raft, cfg)
	if err != nil {
		return err
	}
	return conn.Close()
}

// rejoinEvery is how often a server joins again the voters memberlist holds
// dead (gossip.rejoin).
const rejoinEvery = 5 * time.Second

// rejoinVoters joins again the Raft voters memberlist does not see alive, so
// that a gossip split by a partition heals with the network.
func (c *cluster) rejoinVoters() {
	f := c.s.node.Raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	var ids []string
	for _, srv := range f.Configuration().Servers {
		ids = append(ids, string(srv.ID))
	}
	if n, err := c.g.rejoin(ids); n > 0 {
		c.s.log.Info("gossip: joined again servers held dead", "servers", n)
	} else if err != nil {
		c.s.log.Debug("gossip: servers held dead did not answer", "err", err)
	}
}

// countFailed counts voters not alive in memberlist: the metric and health
// show them; nothing is removed automatically.
func (c *cluster) countFailed() {
	f := c.s.node.Raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	n := 0
	for _, p := range c.peers(f.Configuration()) {
		if !p.Alive {
			n++
		}
	}
	c.failed.Set(float64(n))
}

// peerHealth is one voter as this server sees it.
type peerHealth struct {
	ID    string `json:"id"`
	Raft  string `json:"raft"`
	Alive bool   `json:"alive"`
}

func (c *cluster) peers(conf raft.Configuration) []peerHealth {
	alive := map[string]bool{}
	for _, m := range c.g.members() {
		alive[m.ID] = true
	}
	var out []peerHealth
	for _, srv := range conf.Servers {
		out = append(out, peerHealth{ID: string(srv.ID), Raft: string(srv.Address), Alive: alive[string(srv.ID)]})
	}
	return out
}

// health lists the voters and whether memberlist sees each alive.
func (c *cluster) health() []peerHealth {
	f := c.s.node.Raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	return c.peers(f.Configuration())
}

func (c *cluster) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// memberlist.EventDelegate: any change wakes the loop.
func (c *cluster) NotifyJoin(*memberlist.Node)   { c.poke() }
func (c *cluster) NotifyLeave(*memberlist.Node)  { c.poke() }
func (c *cluster) NotifyUpdate(*memberlist.Node) { c.poke() }

// hasRaftState reports whether this server belongs to a cluster already.
func (s *Server) hasRaftState() bool {
	f := s.node.Raft.GetConfiguration()
	return f.Error() == nil && len(f.Configuration().Servers) > 0
}

// advertised is the API address to tell peers: the listener's, with an
// unspecified host replaced by the gossip address's host.
func advertised(api net.Addr, gossipAddr string) string {
	host, port, err := net.SplitHostPort(api.String())
	if err != nil {
		return api.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if gh, _, err := net.SplitHostPort(gossipAddr); err == nil {
			host = gh
		}
	}
	return net.JoinHostPort(host, port)
}

// peerTLS is a client configuration for reaching server id: its certificate
// must be of the cluster CA and name writ://server/<id>; host names play no
// part. This server presents its own certificate.
func peerTLS(base *tls.Config, id string) *tls.Config {
	cfg := &tls.Config{
		Certificates: base.Certificates, RootCAs: base.RootCAs, MinVersion: tls.VersionTLS13,
		ServerName: "writ-server", InsecureSkipVerify: true,
	}
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("peer sent no certificate")
		}
		leaf := cs.PeerCertificates[0]
		inter := x509Pool(cs.PeerCertificates[1:])
		if _, err := leaf.Verify(x509VerifyServer(base.RootCAs, inter)); err != nil {
			return fmt.Errorf("peer certificate: %w", err)
		}
		role, got, err := pki.Identity(leaf)
		if err != nil {
			return err
		}
		if role != pki.RoleServer || (id != "" && got != id) {
			return fmt.Errorf("peer is writ://%s/%s, want writ://server/%s", role, got, id)
		}
		return nil
	}
	return cfg
}

var _ memberlist.EventDelegate = (*cluster)(nil)
