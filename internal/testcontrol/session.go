package testcontrol

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/writhq/writ/protocol"
)

// Session is one agent's session with the fake, from its hello on. The
// fake answers the hello with a welcome and, if configured, a renew with a
// certificate; everything else is the test's to send and to read.
type Session struct {
	// Hello is the agent's first frame; Peer its client certificate.
	Hello protocol.Hello
	Peer  *x509.Certificate

	c      *Control
	qc     *quic.Conn
	stream *quic.Stream
	wmu    sync.Mutex
	frames chan protocol.Frame // every frame after hello; closed at the end
	mu     sync.Mutex
	issued [][]byte // certificates sent on renew, leaf DER
}

func (c *Control) accept() {
	for {
		qc, err := c.ln.Accept(context.Background())
		if err != nil {
			return
		}
		go c.serve(qc)
	}
}

// serve reads the hello, checks it names the node of the client
// certificate, answers the welcome and hands the session to the test.
func (c *Control) serve(qc *quic.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	stream, err := qc.AcceptStream(ctx)
	if err != nil {
		qc.CloseWithError(1, "no stream")
		return
	}
	peer := qc.ConnectionState().TLS.PeerCertificates[0]
	f, err := protocol.ReadFrame(stream)
	var hello protocol.Hello
	if err == nil && f.Type == protocol.FrameHello {
		err = f.DecodeBody(&hello)
	} else if err == nil {
		err = fmt.Errorf("first frame %q", f.Type)
	}
	s := &Session{Hello: hello, Peer: peer, c: c, qc: qc, stream: stream, frames: make(chan protocol.Frame, 4096)}
	if err != nil || len(peer.URIs) != 1 || peer.URIs[0].String() != "writ://node/"+hello.Node {
		s.send(protocol.FrameBye, protocol.Bye{Error: protocol.ErrorBody{Code: protocol.CodeMalformed, Message: "hello does not name the certificate's node"}})
		qc.CloseWithError(1, "bad hello")
		return
	}
	if err := s.send(protocol.FrameWelcome, protocol.Welcome{Server: "fake",
		Keys:        []protocol.ServerKey{{KeyID: SigningKeyID, Cert: c.keyCert}},
		HeartbeatMS: c.cfg.Heartbeat.Milliseconds()}); err != nil {
		qc.CloseWithError(1, "")
		return
	}
	c.sessions <- s
	defer close(s.frames)
	for {
		f, err := protocol.ReadFrame(stream)
		if err != nil {
			return
		}
		if f.Type == protocol.FrameRenew && c.cfg.Renew {
			s.renew(f)
		}
		select {
		case s.frames <- f:
		default: // nobody reads: the test only wanted some of them
		}
	}
}

func (s *Session) renew(f protocol.Frame) {
	var r protocol.Renew
	if f.DecodeBody(&r) != nil {
		return
	}
	chain, err := s.c.ca.signCSR(s.Hello.Node, r.CSR, s.c.cfg.RenewedCertValidity)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.issued = append(s.issued, chain[0])
	s.mu.Unlock()
	s.send(protocol.FrameCertificate, protocol.Certificate{Chain: chain})
}

// Issued are the leaf certificates (DER) the fake sent on renew.
func (s *Session) Issued() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.issued...)
}

func (s *Session) send(typ string, body any) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.stream.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return protocol.WriteFrame(s.stream, typ, body)
}

// Send writes a frame to the agent, failing the test if it cannot.
func (s *Session) Send(t testing.TB, typ string, body any) {
	t.Helper()
	if err := s.send(typ, body); err != nil {
		t.Fatalf("testcontrol: send %s: %v", typ, err)
	}
}

// Close ends the session with a QUIC application error code: 2 says the
// node is revoked, as the real server does.
func (s *Session) Close(code quic.ApplicationErrorCode) { s.qc.CloseWithError(code, "") }

// Timeout bounds every wait of the fake; it only stops a broken test.
const Timeout = 20 * time.Second

// NextSession waits for the next session to pass its hello.
func (c *Control) NextSession(t testing.TB) *Session {
	t.Helper()
	select {
	case s := <-c.sessions:
		return s
	case <-time.After(Timeout):
		t.Fatal("testcontrol: no session began")
		return nil
	}
}

// ErrEnded is what Next reports for a session that ended.
var ErrEnded = errors.New("testcontrol: the session ended")

// Next returns the agent's next frame of type typ, skipping others
// (heartbeats), or fails the test if the session ends or none comes.
func (s *Session) Next(t testing.TB, typ string) protocol.Frame {
	t.Helper()
	f, err := s.next(typ)
	if err != nil {
		t.Fatalf("testcontrol: waiting for a %s frame: %v", typ, err)
	}
	return f
}

func (s *Session) next(typ string) (protocol.Frame, error) {
	deadline := time.After(Timeout)
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				return protocol.Frame{}, ErrEnded
			}
			if f.Type == typ {
				return f, nil
			}
		case <-deadline:
			return protocol.Frame{}, errors.New("timed out")
		}
	}
}

// Ended waits for the agent to end the session (its frames stop).
func (s *Session) Ended(t testing.TB) {
	t.Helper()
	if _, err := s.next("\x00never"); !errors.Is(err, ErrEnded) {
		t.Fatalf("testcontrol: the session did not end: %v", err)
	}
}
