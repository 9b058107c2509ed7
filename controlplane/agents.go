package controlplane

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"github.com/quic-go/quic-go"

	"github.com/writhq/writ/controlplane/internal/fsm"
)

// listenAgents opens the QUIC listener of node sessions. 0-RTT is off: a
// replayed first flight must never reach the session.
func (s *Server) listenAgents(cert tls.Certificate) error {
	fl, err := newFleet(s.cfg)
	if err != nil {
		return err
	}
	ln, err := quic.ListenAddr(s.cfg.AgentAddr, fl.agentTLS(cert), &quic.Config{
		HandshakeIdleTimeout: 10 * time.Second,
		MaxIdleTimeout:       3 * s.cfg.AgentHeartbeat,
		Allow0RTT:            false,
		// The session is one bidirectional stream; a node may open no
		// unidirectional one.
		MaxIncomingStreams:    4,
		MaxIncomingUniStreams: -1,
	})
	if err != nil {
		return fmt.Errorf("controlplane: agent address: %w", err)
	}
	s.fleet, s.agents = fl, ln
	s.fsm.OnNodeChange(func(node string) {
		if node == "" {
			for _, ss := range fl.all() {
				ss.kick()
			}
		} else if ss := fl.session(node); ss != nil {
			ss.kick()
		}
	})
	return nil
}

// AgentAddr is the UDP address node sessions are served on, or "".
func (s *Server) AgentAddr() string {
	if s.agents == nil {
		return ""
	}
	return s.agents.Addr().String()
}

// NodeSessions is the number of node sessions this server holds.
func (s *Server) NodeSessions() int {
	if s.fleet == nil {
		return 0
	}
	s.fleet.mu.Lock()
	defer s.fleet.mu.Unlock()
	return len(s.fleet.sessions)
}

// CAFingerprint is the cluster CA fingerprint join tokens pin.
func (s *Server) CAFingerprint() string {
	if s.fleet == nil {
		return ""
	}
	return s.fleet.pin
}

func (s *Server) acceptAgents() {
	defer s.done.Done()
	for {
		conn, err := s.agents.Accept(context.Background())
		if err != nil {
			return
		}
		go s.serveSession(conn)
	}
}

// watchSessions ends sessions whose node went silent, and records as down the
// nodes this server is recorded as holding without holding them (after its
// own restart, or a session that ended while Raft had no leader).
func (s *Server) watchSessions() {
	defer s.done.Done()
	every := s.cfg.AgentHeartbeat
	started := time.Now()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		for _, ss := range s.fleet.all() {
			ss.mu.Lock()
			silent := time.Since(ss.lastSeen) > 3*every
			ss.mu.Unlock()
			if silent {
				ss.log().Warn("node went silent; ending its session")
				ss.close("silent")
			}
		}
		if time.Since(started) < 3*every || s.node.Raft.State() != raft.Leader {
			continue
		}
		for _, id := range s.reads.HeldBy(s.cfg.ID) {
			if s.fleet.session(id) != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			// The session this server's view holds: a newer one, whose
			// hello this view has not applied yet, is left alone.
			n, _ := s.reads.Node(id)
			s.applyAnywhere(ctx, fsm.MsgNodeSession, fsm.NodeSession{At: s.now(), Node: id, Server: s.cfg.ID, Session: n.Session})
			cancel()
		}
	}
}
