package controlplane

import (
	"errors"
	"fmt"
	"net"
)

// ClusterConfig says how a server finds the others (docs/controlplane.md,
// "Clusters"). Discovery is hashicorp/memberlist; it is for finding servers
// and routing to the leader, never for a safety decision.
type ClusterConfig struct {
	// GossipAddr is where memberlist listens, TCP and UDP (host:port).
	// Required for any cluster of more than one server.
	GossipAddr string
	// Join lists gossip addresses of other servers; the server keeps trying
	// them until one answers.
	Join []string
	// BootstrapExpect forms a new cluster once this many servers (1, 3 or 5)
	// with the same setting see each other and none of them has Raft state.
	// 0 with Bootstrap false: join an existing cluster, whose leader adds
	// this server as a voter.
	BootstrapExpect int
}

// clustered reports whether the server runs discovery.
func (c *ClusterConfig) clustered() bool { return c.GossipAddr != "" }

// validateCluster refuses cluster settings that could split a cluster or
// never form one. It may turn BootstrapExpect 1 into Bootstrap.
func (c *Config) validateCluster() error {
	cl := &c.Cluster
	switch cl.BootstrapExpect {
	case 0, 1, 3, 5:
	case 2, 4:
		return fmt.Errorf("controlplane: bootstrap_expect %d: a cluster of %d servers survives no more failures than one of %d; use 1, 3 or 5", cl.BootstrapExpect, cl.BootstrapExpect, cl.BootstrapExpect-1)
	default:
		return fmt.Errorf("controlplane: bootstrap_expect must be 1, 3 or 5, not %d", cl.BootstrapExpect)
	}
	if cl.BootstrapExpect == 1 {
		cl.BootstrapExpect, c.Bootstrap = 0, true
	}
	if c.Bootstrap && cl.BootstrapExpect > 1 {
		return errors.New("controlplane: bootstrap (a single-server cluster) and bootstrap_expect contradict each other; set one")
	}
	if c.Dev && (cl.clustered() || len(cl.Join) > 0 || cl.BootstrapExpect > 0) {
		return errors.New("controlplane: dev mode is a single server; clusters run writ server with TLS")
	}
	if !c.Bootstrap && cl.BootstrapExpect == 0 && len(cl.Join) == 0 {
		return errors.New("controlplane: no bootstrap, no bootstrap_expect and no join: this server could never form or find a cluster; set bootstrap_expect (3 or 5) or join")
	}
	if (cl.BootstrapExpect > 1 || len(cl.Join) > 0) && cl.GossipAddr == "" {
		return errors.New("controlplane: join and bootstrap_expect need gossip_addr, where servers find each other")
	}
	if cl.GossipAddr != "" {
		if _, _, err := net.SplitHostPort(cl.GossipAddr); err != nil {
			return fmt.Errorf("controlplane: gossip_addr %q: %v", cl.GossipAddr, err)
		}
	}
	for _, j := range cl.Join {
		if _, _, err := net.SplitHostPort(j); err != nil {
			return fmt.Errorf("controlplane: join address %q must be host:port", j)
		}
	}
	return nil
}
