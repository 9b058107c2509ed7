// Package simagent is a lightweight simulated node agent, for measuring the
// control plane with many nodes: it enrolls with a real join token (its keys
// made here, a CSR for its TLS key), holds a real QUIC session with mutual TLS
// and its CA-issued certificate, verifies every dispatch against the server's
// certified key, and answers each with a signed result that echoes the
// params. It runs no tool and keeps nothing on disk: the real agent is
// nodeagent. Many agents share a few UDP sockets (quic.Transport), so that
// ten thousand of them are cheap on the client side. Control-plane tests
// make it misbehave as a node may: hold results back, send an output that
// does not match its result, sign the older result format.
package simagent

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/quic-go/quic-go"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// Agent is one simulated node.
type Agent struct {
	ID   string
	key  ed25519.PrivateKey
	cert tls.Certificate
	pool *x509.CertPool

	wmu    sync.Mutex // guards conn and stream, and writes to stream
	conn   *quic.Conn
	stream *quic.Stream
	keys   *ServerKeys
	// Runs counts the dispatches that verified; Acks the acks of
	// committed results.
	Runs, Acks atomic.Int64
	// OnAck, if set before Connect, is called with each acknowledged dispatch.
	OnAck func(dispatchID string)
	// OnDispatch, if set before Connect, is called as each dispatch frame
	// arrives, before it is verified.
	OnDispatch func()
	// OnRefused, if set before Connect, is called with each ack that
	// refuses a result.
	OnRefused func(protocol.Ack)
	// OnCancel, if set before Connect, is called with the dispatch id of
	// each cancel frame, after a held dispatch it names is answered
	// canceled.
	OnCancel func(dispatchID string)
	// Concurrency is the hello's concurrency (0: 64), set before Connect.
	Concurrency int
	// Hold, while set, keeps verified dispatches unanswered (a node that
	// runs and goes silent) until Release.
	Hold atomic.Bool
	// BadOutput, when set, is sent beside each result in place of the
	// output the result commits to.
	BadOutput atomic.Pointer[[]byte]
	// V1, when set, signs writ.result/v1 results with the output inside.
	V1 atomic.Bool

	mu   sync.Mutex
	held []*protocol.Dispatch
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
	body, _ := jsonx.Marshal(protocol.EnrollRequest{Token: token, Name: name, Public: pub, CSR: csr})
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
	a.wmu.Lock()
	a.conn, a.stream, a.keys = conn, stream, keys
	a.wmu.Unlock()
	if err := a.write(protocol.FrameHello, protocol.Hello{Node: a.ID, Version: "sim", OS: "linux", Arch: "amd64",
		Tiers: []string{"wasm"}, Tools: tools, Concurrency: cmp.Or(a.Concurrency, 64)}); err != nil {
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
	go a.serve(conn, stream)
	return nil
}

// Done is closed when the session ends.
func (a *Agent) Done() <-chan struct{} {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	return a.conn.Context().Done()
}

// Certificate is the node's TLS certificate chain and key, as the CA issued
// it at enrollment.
func (a *Agent) Certificate() tls.Certificate { return a.cert }

// CAPool holds the cluster CA the agent learnt at enrollment, which it
// trusts for the server's certificate.
func (a *Agent) CAPool() *x509.CertPool { return a.pool }

// Heartbeat reports the agent alive, with the dispatches it holds in flight.
func (a *Agent) Heartbeat() error {
	a.mu.Lock()
	n := len(a.held)
	a.mu.Unlock()
	return a.write(protocol.FrameHeartbeat, protocol.Heartbeat{InFlight: n})
}

// Close ends the session.
func (a *Agent) Close() {
	a.wmu.Lock()
	conn := a.conn
	a.wmu.Unlock()
	if conn != nil {
		conn.CloseWithError(0, "")
	}
}

func (a *Agent) write(typ string, body any) error {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	a.stream.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return protocol.WriteFrame(a.stream, typ, body)
}

// Release answers the dispatches held back while Hold was set.
func (a *Agent) Release() {
	a.mu.Lock()
	held := a.held
	a.held = nil
	a.mu.Unlock()
	for _, d := range held {
		a.answer(d, protocol.StatusOK)
	}
}

// cancel answers a held dispatch with status canceled, as an agent that
// stopped its tool does.
func (a *Agent) cancel(id string) {
	a.mu.Lock()
	var d *protocol.Dispatch
	for i, h := range a.held {
		if h.ID == id {
			d = h
			a.held = append(a.held[:i:i], a.held[i+1:]...)
			break
		}
	}
	a.mu.Unlock()
	if d != nil {
		a.answer(d, protocol.StatusCanceled)
	}
	if a.OnCancel != nil {
		a.OnCancel(id)
	}
}

// serve reads one session's frames until it ends, then closes it.
func (a *Agent) serve(conn *quic.Conn, stream *quic.Stream) {
	for {
		f, err := protocol.ReadFrame(stream)
		if err != nil {
			conn.CloseWithError(0, "")
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
			if a.Hold.Load() {
				a.mu.Lock()
				a.held = append(a.held, d)
				a.mu.Unlock()
				continue
			}
			if err := a.answer(d, protocol.StatusOK); err != nil {
				conn.CloseWithError(0, "")
				return
			}
		case protocol.FrameCancel:
			var c protocol.CancelDispatch
			if f.DecodeBody(&c) == nil {
				a.cancel(c.DispatchID)
			}
		case protocol.FrameAck:
			var ack protocol.Ack
			if f.DecodeBody(&ack) != nil {
				continue
			}
			if ack.Error != nil {
				if a.OnRefused != nil {
					a.OnRefused(ack)
				}
				continue
			}
			a.Acks.Add(1)
			if a.OnAck != nil {
				a.OnAck(ack.DispatchID)
			}
		}
	}
}

// answer sends d's signed result with status, its output the params.
func (a *Agent) answer(d *protocol.Dispatch, status string) error {
	now := protocol.FormatTime(time.Now())
	sum := sha256.Sum256(d.Params)
	r := &protocol.Result{Type: protocol.ResultTypeV2, DispatchID: d.ID, IntentID: d.IntentID, Node: a.ID,
		Status: status, Sandbox: "wasm", StartedAt: now, FinishedAt: now, KeyID: a.ID}
	if status == protocol.StatusCanceled {
		r.Error = "canceled: stopped"
	}
	r.SetCaptured(protocol.FormatHash(sum), int64(len(d.Params)), d.Params, false)
	output := []byte(d.Params)
	if b := a.BadOutput.Load(); b != nil {
		output = *b
	}
	if a.V1.Load() {
		r.Type, r.CapturedHash, r.CapturedBytes, r.Output = protocol.ResultTypeV1, "", nil, string(d.Params)
	}
	raw, err := r.SignCanonical(a.key)
	if err != nil {
		return err
	}
	return a.write(protocol.FrameResult, protocol.ResultFrame{Result: raw, Output: output})
}
