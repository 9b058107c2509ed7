package controlplane_test

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
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/quic-go/quic-go"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// simNode is a lightweight node for control-plane tests: it enrolls with a
// real join token, holds a real QUIC session with a CA-issued certificate,
// verifies every dispatch with the server's certified key, and answers with
// a signed result that echoes the params. The real agent is nodeagent (which
// this package may not import); cmd/writ tests run that one.
type simNode struct {
	id     string
	key    ed25519.PrivateKey
	tlsKey *ecdsa.PrivateKey
	chain  [][]byte
	ca     *x509.CertPool
	conn   *quic.Conn
	stream *quic.Stream
	wmu    sync.Mutex
	keys   map[string]ed25519.PublicKey
	runs   atomic.Int64
	// hold, when set, keeps results back (a node that runs and goes silent)
	// until release.
	hold atomic.Bool
	// concurrency is what its hello says (0: 64).
	concurrency int
	mu          sync.Mutex
	held        []*protocol.Dispatch
	// badOutput, when set, is sent beside each result instead of the
	// output it commits to; v1, when set, signs a writ.result/v1 with the
	// output inside. errAcks receives the acks that refuse a result.
	badOutput atomic.Pointer[[]byte]
	v1        atomic.Bool
	errAcks   chan protocol.Ack
	// canceled receives the dispatch ids of the cancel frames; a held
	// dispatch that is canceled is answered with status canceled.
	canceled chan string
}

func (n *simNode) SignerKey(id string) (ed25519.PublicKey, bool) { k, ok := n.keys[id]; return k, ok }

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
	n := &simNode{keys: map[string]ed25519.PublicKey{}, errAcks: make(chan protocol.Ack, 16), canceled: make(chan string, 64)}
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	n.key = key
	n.tlsKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	csr, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, n.tlsKey)
	body, _ := jsonx.Marshal(map[string]any{"token": tok.Token, "name": "sim", "public": []byte(pub), "csr": csr})
	resp, err := hc.Post(base+"/v1/enroll", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out protocol.EnrollResponse
	if err := jsonv2.UnmarshalRead(resp.Body, &out, jsonx.Lenient); err != nil || resp.StatusCode != 200 {
		t.Fatalf("enroll: HTTP %d, %v", resp.StatusCode, err)
	}
	n.id, n.chain = out.Node, out.Chain
	ca, _ := x509.ParseCertificate(out.Chain[len(out.Chain)-1])
	n.ca = x509.NewCertPool()
	n.ca.AddCert(ca)
	return n
}

// connect opens the session and says hello with the given tools.
func (n *simNode) connect(t testing.TB, addr string, tools map[string]string) error {
	t.Helper()
	cert := tls.Certificate{Certificate: n.chain, PrivateKey: n.tlsKey}
	conn, err := quic.DialAddr(context.Background(), addr, &tls.Config{
		Certificates: []tls.Certificate{cert}, RootCAs: n.ca, ServerName: "127.0.0.1",
		NextProtos: []string{protocol.ALPN}, MinVersion: tls.VersionTLS13,
	}, &quic.Config{KeepAlivePeriod: 5 * time.Second})
	if err != nil {
		return err
	}
	stream, err := conn.OpenStreamSync(context.Background())
	if err != nil {
		return err
	}
	n.conn, n.stream = conn, stream
	refs := []protocol.ToolRef{}
	for name, hash := range tools {
		refs = append(refs, protocol.ToolRef{Name: name, Hash: hash})
	}
	n.write(protocol.FrameHello, protocol.Hello{Node: n.id, Version: "sim", OS: "linux", Arch: "amd64",
		Tiers: []string{"wasm"}, Tools: refs, Concurrency: cmp.Or(n.concurrency, 64)})
	f, err := protocol.ReadFrame(stream)
	if err != nil {
		return err
	}
	var w protocol.Welcome
	if f.Type != protocol.FrameWelcome || f.DecodeBody(&w) != nil {
		return fmt.Errorf("no welcome: %s", f.Type)
	}
	for _, k := range w.Keys {
		c, err := x509.ParseCertificate(k.Cert)
		if err != nil {
			return err
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: n.ca, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			return err
		}
		n.keys[k.KeyID] = c.PublicKey.(ed25519.PublicKey)
	}
	go n.serve()
	return nil
}

func (n *simNode) write(typ string, body any) error {
	n.wmu.Lock()
	defer n.wmu.Unlock()
	return protocol.WriteFrame(n.stream, typ, body)
}

func (n *simNode) serve() {
	v, _ := protocol.NewVerifier(protocol.DefaultConfig())
	for {
		f, err := protocol.ReadFrame(n.stream)
		if err != nil {
			return
		}
		if f.Type == protocol.FrameAck {
			var a protocol.Ack
			if f.DecodeBody(&a) == nil && a.Error != nil && n.errAcks != nil {
				select {
				case n.errAcks <- a:
				default:
				}
			}
			continue
		}
		if f.Type == protocol.FrameCancel {
			var c protocol.CancelDispatch
			if f.DecodeBody(&c) == nil {
				n.cancel(c.DispatchID)
			}
			continue
		}
		if f.Type != protocol.FrameDispatch {
			continue
		}
		var df protocol.DispatchFrame
		if f.DecodeBody(&df) != nil {
			continue
		}
		d, err := v.VerifyDispatch(df.Dispatch, n.id, n)
		if err != nil {
			continue
		}
		n.runs.Add(1)
		if n.hold.Load() {
			n.mu.Lock()
			n.held = append(n.held, d)
			n.mu.Unlock()
			continue
		}
		n.answer(d)
	}
}

// release sends the results held back.
func (n *simNode) release() {
	n.mu.Lock()
	held := n.held
	n.held = nil
	n.mu.Unlock()
	for _, d := range held {
		n.answer(d)
	}
}

// cancel answers a held dispatch with status canceled, as an agent that
// stopped its tool does, and reports the cancel on canceled.
func (n *simNode) cancel(id string) {
	n.mu.Lock()
	var d *protocol.Dispatch
	for i, h := range n.held {
		if h.ID == id {
			d = h
			n.held = append(n.held[:i:i], n.held[i+1:]...)
			break
		}
	}
	n.mu.Unlock()
	if d != nil {
		n.answerStatus(d, protocol.StatusCanceled)
	}
	select {
	case n.canceled <- id:
	default:
	}
}

func (n *simNode) answer(d *protocol.Dispatch) { n.answerStatus(d, protocol.StatusOK) }

func (n *simNode) answerStatus(d *protocol.Dispatch, status string) {
	{
		now := protocol.FormatTime(time.Now())
		sum := sha256.Sum256(d.Params)
		r := &protocol.Result{Type: protocol.ResultTypeV2, DispatchID: d.ID, IntentID: d.IntentID, Node: n.id,
			Status: status, Sandbox: "wasm", StartedAt: now, FinishedAt: now, KeyID: n.id}
		if status == protocol.StatusCanceled {
			r.Error = "canceled: stopped"
		}
		r.SetCaptured(protocol.FormatHash(sum), int64(len(d.Params)), d.Params, false)
		output := []byte(d.Params)
		if b := n.badOutput.Load(); b != nil {
			output = *b
		}
		if n.v1.Load() {
			r.Type, r.CapturedHash, r.CapturedBytes, r.Output = protocol.ResultTypeV1, "", nil, string(d.Params)
		}
		r.Sign(n.key)
		raw, _ := jsonv2.Marshal(r)
		n.write(protocol.FrameResult, protocol.ResultFrame{Result: raw, Output: output})
	}
}

func (n *simNode) close() {
	if n.conn != nil {
		n.conn.CloseWithError(0, "")
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
	jsonv2.UnmarshalRead(resp.Body, &out, jsonx.Lenient)
	m := map[string]string{}
	for _, tl := range out.Tools {
		m[tl.Name] = tl.Hash
	}
	return m
}
