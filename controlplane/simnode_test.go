package controlplane_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/quic-go/quic-go"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/internal/simagent"
	"github.com/writhq/writ/protocol"
)

// simNode is a simulated node (internal/simagent) for control-plane tests:
// it enrolls with a real join token, holds a real QUIC session with a
// CA-issued certificate, verifies every dispatch with the server's certified
// key, and answers with a signed result that echoes the params. The real
// agent is nodeagent (which this package may not import); cmd/writ tests
// run that one. canceled receives the dispatch ids of cancel frames,
// errAcks the acks that refuse a result.
type simNode struct {
	*simagent.Agent
	canceled chan string
	errAcks  chan protocol.Ack
	tr       *quic.Transport // of the current session
}

// enrollSim enrolls a node through the API.
func enrollSim(t testing.TB, s *controlplane.Server, base string) *simNode {
	t.Helper()
	return enrollSimVia(t, s, base, http.DefaultClient)
}

// enrollSimVia enrolls a node through the API with hc (one that trusts the
// cluster CA for a server over TLS).
func enrollSimVia(t testing.TB, s *controlplane.Server, base string, hc *http.Client) *simNode {
	t.Helper()
	tok, aerr := s.CreateJoinToken(context.Background(), map[string]string{"zone": "a"}, time.Hour)
	if aerr != nil {
		t.Fatal(aerr)
	}
	a, err := simagent.Enroll(context.Background(), hc, base, tok.Token, "sim")
	if err != nil {
		t.Fatal(err)
	}
	n := &simNode{Agent: a, errAcks: make(chan protocol.Ack, 16), canceled: make(chan string, 64)}
	a.OnRefused = func(ack protocol.Ack) {
		select {
		case n.errAcks <- ack:
		default:
		}
	}
	a.OnCancel = func(id string) {
		select {
		case n.canceled <- id:
		default:
		}
	}
	return n
}

// connect opens a session with the server's node address addr, on a UDP
// socket of its own, and says hello with the given tools.
func (n *simNode) connect(t testing.TB, addr string, tools map[string]string) error {
	t.Helper()
	udp, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return err
	}
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return err
	}
	refs := []protocol.ToolRef{}
	for name, hash := range tools {
		refs = append(refs, protocol.ToolRef{Name: name, Hash: hash})
	}
	tr := &quic.Transport{Conn: pc}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Connect(ctx, tr, udp, refs, &simagent.ServerKeys{}); err != nil {
		tr.Close()
		return err
	}
	n.tr = tr
	return nil
}

// close ends the session and frees its socket.
func (n *simNode) close() {
	n.Close()
	if n.tr != nil {
		n.tr.Close()
	}
}

// toolHashes reads the registered tools' manifest hashes from the API.
func toolHashes(t testing.TB, base string) map[string]string {
	t.Helper()
	return toolHashesVia(t, base, http.DefaultClient)
}

func toolHashesVia(t testing.TB, base string, hc *http.Client) map[string]string {
	t.Helper()
	var out struct {
		Tools []struct {
			Name string `json:"name"`
			Hash string `json:"manifest_hash"`
		} `json:"tools"`
	}
	resp, err := hc.Get(base + "/v1/tools")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	json.UnmarshalRead(resp.Body, &out, jsonx.Lenient)
	m := map[string]string{}
	for _, tl := range out.Tools {
		m[tl.Name] = tl.Hash
	}
	return m
}
