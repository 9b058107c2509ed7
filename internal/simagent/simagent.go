// Package simagent is a lightweight simulated node agent, for measuring the
// control plane with many nodes: it enrolls with a real join token (its keys
// made here, a CSR for its TLS key), holds a real QUIC session with mutual TLS
// and its CA-issued certificate, verifies every dispatch against the server's
// certified key, and answers each with a signed result that echoes the
// params. It runs no tool and keeps nothing on disk: the real agent is
// nodeagent. Many agents share a few UDP sockets (quic.Transport), so that
// ten thousand of them are cheap on the client side.
package simagent

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/quic-go/quic-go"

	"github.com/writhq/writ/protocol"
)

// Agent is one simulated node.
type Agent struct {
	ID   string
	key  ed25519.PrivateKey
	cert tls.Certificate
	pool *x509.CertPool

	conn   *quic.Conn
	stream *quic.Stream
	wmu    sync.Mutex
	keys   *ServerKeys
	// Runs counts the dispatches that verified; Results the acks of
	// committed results.
	Runs, Acks atomic.Int64
	// OnAck, if set before Connect, is called with each acknowledged dispatch.
	OnAck func(dispatchID string)
	// OnDispatch, if set before Connect, is called as each dispatch frame
	// arrives, before it is verified.
	OnDispatch func()
}

// Enroll generates the node's Ed25519 result key and ECDSA TLS key, and
// enrolls it with a join token at base (http://… or https://…).
func Enroll(ctx context.Context, hc *http.Client, base, token, name string) (*Agent, error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	tlsKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, tlsKey)
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(protocol.EnrollRequest{Token: token, Name: name, Public: pub, CSR: csr})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/enroll", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("simagent: enroll: HTTP %d: %s", resp.StatusCode, b)
	}
	var out protocol.EnrollResponse
	if err := json.Unmarshal(b, &out); err != nil || len(out.Chain) < 2 {
		return nil, fmt.Errorf("simagent: enroll: bad answer: %v", err)
	}
	ca, err := x509.ParseCertificate(out.Chain[len(out.Chain)-1])
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &Agent{ID: out.Node, key: key, pool: pool,
		cert: tls.Certificate{Certificate: out.Chain, PrivateKey: tlsKey}}, nil
}

// ServerKeys are the dispatch-signing keys agents trust, shared by a fleet of
// agents: each certificate is checked against the CA once.
type ServerKeys struct {
	mu    sync.RWMutex
	keys  map[string]ed25519.PublicKey
	certs map[string][]byte
}

// SignerKey implements protocol.SignerKeys.
func (k *ServerKeys) SignerKey(id string) (ed25519.PublicKey, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	p, ok := k.keys[id]
	return p, ok
}

func (k *ServerKeys) add(sk protocol.ServerKey, pool *x509.CertPool) error {
	k.mu.RLock()
	seen := bytes.Equal(k.certs[sk.KeyID], sk.Cert)
	k.mu.RUnlock()
	if seen {
		return nil
	}
	c, err := x509.ParseCertificate(sk.Cert)
	if err != nil {
		return err
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("simagent: server key %s: %w", sk.KeyID, err)
	}
	if len(c.URIs) != 1 || c.URIs[0].String() != "writ://server/"+sk.KeyID {
		return fmt.Errorf("simagent: server key %s: the certificate names %v", sk.KeyID, c.URIs)
	}
	pub, ok := c.PublicKey.(ed25519.PublicKey)
	if !ok {
		return fmt.Errorf("simagent: server key %s is not Ed25519", sk.KeyID)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keys == nil {
		k.keys, k.certs = map[string]ed25519.PublicKey{}, map[string][]byte{}
	}
	k.keys[sk.KeyID], k.certs[sk.KeyID] = pub, sk.Cert
	return nil
}

var verifier, _ = protocol.NewVerifier(protocol.DefaultConfig())

// Connect dials addr over tr, says hello with tools, checks the welcome's
// keys into keys, and serves dispatches until the session ends.
func (a *Agent) Connect(ctx context.Context, tr *quic.Transport, addr *net.UDPAddr, tools []protocol.ToolRef, keys *ServerKeys) error {
	tc := &tls.Config{
		Certificates: []tls.Certificate{a.cert}, RootCAs: a.pool, ServerName: addr.IP.String(),
		NextProtos: []string{protocol.ALPN}, MinVersion: tls.VersionTLS13,
	}
	conn, err := tr.Dial(ctx, addr, tc, &quic.Config{
		HandshakeIdleTimeout: 10 * time.Second, MaxIdleTimeout: 60 * time.Second, KeepAlivePeriod: 20 * time.Second,
	})
	if err != nil {
		return err
	}
	stream, err := conn.OpenStreamSync(ctx)
	if err != nil {
		conn.CloseWithError(0, "")
		return err
	}
	a.conn, a.stream, a.keys = conn, stream, keys
	if err := a.write(protocol.FrameHello, protocol.Hello{Node: a.ID, Version: "sim", OS: "linux", Arch: "amd64",
		Tiers: []string{"wasm"}, Tools: tools, Concurrency: 64}); err != nil {
		a.Close()
		return err
	}
	stream.SetReadDeadline(time.Now().Add(30 * time.Second))
	f, err := protocol.ReadFrame(stream)
	stream.SetReadDeadline(time.Time{})
	if err != nil {
		a.Close()
		return fmt.Errorf("simagent: no welcome: %w", err)
	}
	var w protocol.Welcome
	if f.Type != protocol.FrameWelcome || f.DecodeBody(&w) != nil {
		a.Close()
		return fmt.Errorf("simagent: no welcome but %s", f.Type)
	}
	for _, k := range w.Keys {
		if err := keys.add(k, a.pool); err != nil {
			a.Close()
			return err
		}
	}
	if every := time.Duration(w.HeartbeatMS) * time.Millisecond; every > 0 {
		// A timer, not a goroutine, per agent; the first beat at a random
		// point of the period, so that a fleet's beats spread out.
		var t *time.Timer
		t = time.AfterFunc(mrand.N(every), func() {
			if a.Heartbeat() == nil {
				t.Reset(every)
			}
		})
		context.AfterFunc(conn.Context(), func() { t.Stop() })
	}
	go a.serve()
	return nil
}

// Done is closed when the session ends.
func (a *Agent) Done() <-chan struct{} { return a.conn.Context().Done() }

// Heartbeat reports the agent alive and idle.
func (a *Agent) Heartbeat() error {
	return a.write(protocol.FrameHeartbeat, protocol.Heartbeat{})
}

// Close ends the session.
func (a *Agent) Close() {
	if a.conn != nil {
		a.conn.CloseWithError(0, "")
	}
}

func (a *Agent) write(typ string, body any) error {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	a.stream.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return protocol.WriteFrame(a.stream, typ, body)
}

func (a *Agent) serve() {
	for {
		f, err := protocol.ReadFrame(a.stream)
		if err != nil {
			a.Close()
			return
		}
		switch f.Type {
		case protocol.FrameDispatch:
			if a.OnDispatch != nil {
				a.OnDispatch()
			}
			var df protocol.DispatchFrame
			if f.DecodeBody(&df) != nil {
				continue
			}
			d, err := verifier.VerifyDispatch(df.Dispatch, a.ID, a.keys)
			if err != nil {
				continue
			}
			a.Runs.Add(1)
			if err := a.answer(d); err != nil {
				a.Close()
				return
			}
		case protocol.FrameAck:
			var ack protocol.Ack
			if f.DecodeBody(&ack) == nil && ack.Error == nil {
				a.Acks.Add(1)
				if a.OnAck != nil {
					a.OnAck(ack.DispatchID)
				}
			}
		}
	}
}

func (a *Agent) answer(d *protocol.Dispatch) error {
	now := protocol.FormatTime(time.Now())
	sum := sha256.Sum256(d.Params)
	r := &protocol.Result{Type: protocol.ResultTypeV2, DispatchID: d.ID, IntentID: d.IntentID, Node: a.ID,
		Status: protocol.StatusOK, Sandbox: "wasm", StartedAt: now, FinishedAt: now, KeyID: a.ID}
	r.SetCaptured(protocol.FormatHash(sum), int64(len(d.Params)), d.Params, false)
	if err := r.Sign(a.key); err != nil {
		return err
	}
	raw, err := jsonv2.Marshal(r)
	if err != nil {
		return err
	}
	return a.write(protocol.FrameResult, protocol.ResultFrame{Result: raw, Output: d.Params})
}
