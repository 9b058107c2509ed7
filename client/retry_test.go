package client

import (
	"context"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// shedding is a listener that closes its first n connections as soon as
// they are accepted, before any handshake, as a server at capacity sheds
// them (controlplane's handshakeListener).
type shedding struct {
	net.Listener
	n atomic.Int64
}

func (l *shedding) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.n.Add(-1) < 0 {
			return c, err
		}
		c.Close()
	}
}

// answering counts the requests a handler saw and answers each with the
// first of replies not yet used (the last one from then on).
func answering(seen *atomic.Int64, replies ...func(http.ResponseWriter)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n := int(seen.Add(1))
		replies[min(n, len(replies))-1](w)
	}
}

func completed(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"intent_id":"int-1","state":"completed"}`))
}

func noLeader(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write([]byte(`{"error":{"code":"no_leader","message":"no leader"}}`))
}

// TestShedHandshakeSentAgain: a lone server that closes connections before
// their TLS handshake (at capacity) gets the request again, even one that is
// not safe to resend: it never left the client.
func TestShedHandshakeSentAgain(t *testing.T) {
	var seen atomic.Int64
	srv := httptest.NewUnstartedServer(answering(&seen, completed))
	l := &shedding{Listener: srv.Listener}
	l.n.Store(2)
	srv.Listener = l
	srv.StartTLS()
	defer srv.Close()
	c := New(srv.URL, "")
	if err := c.TrustCA(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.Approve(ctx, []byte(`{}`))
	if err != nil || r.IntentID != "int-1" {
		t.Fatalf("an approval through two shed handshakes: %+v %v", r, err)
	}
	if got := seen.Load(); got != 1 {
		t.Fatalf("the server saw the approval %d times, want 1", got)
	}
	if left := l.n.Load(); left >= 0 {
		t.Fatalf("the listener shed %d connections, want 2", 2-left)
	}
}

// throughTwo makes call on a client of a lone server that answers reply
// twice, then completed, and fails the test unless the call ends completed
// after 3 requests. It returns the client, the server's count and a context
// that ends with the test.
func throughTwo(t *testing.T, reply func(http.ResponseWriter), what string, call func(*Client, context.Context) (*IntentResponse, error)) (*Client, *atomic.Int64, context.Context) {
	t.Helper()
	seen := new(atomic.Int64)
	srv := httptest.NewServer(answering(seen, reply, reply, completed))
	t.Cleanup(srv.Close)
	c := New(srv.URL, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	r, err := call(c, ctx)
	if err != nil || r.IntentID != "int-1" || seen.Load() != 3 {
		t.Fatalf("%s through two refusals: %+v %v after %d requests, want completed after 3", what, r, err, seen.Load())
	}
	return c, seen, ctx
}

// TestLoneServerNoLeaderSentAgain: 503 no_leader from the only server is
// tried again for a request safe to resend, and ends the call for one that
// is not (an approval: a second one would find its nonce consumed).
func TestLoneServerNoLeaderSentAgain(t *testing.T) {
	c, seen, ctx := throughTwo(t, noLeader, "a submission", func(c *Client, ctx context.Context) (*IntentResponse, error) {
		return c.Submit(ctx, []byte(`{}`), nil, 0)
	})
	seen.Store(0)
	_, err := c.Approve(ctx, []byte(`{}`))
	var ae *Error
	if !errors.As(err, &ae) || ae.Code != "no_leader" || seen.Load() != 1 {
		t.Fatalf("an approval answered no_leader: %v after %d requests, want no_leader after 1", err, seen.Load())
	}
}

func authorizationChanged(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write([]byte(`{"error":{"code":"authorization_changed","message":"keys, tools or the policy set changed"}}`))
}

// TestAuthorizationChangedSentAgain: 503 authorization_changed, which the
// server answers having recorded nothing (an approval's nonce unconsumed),
// is tried again for every request, an approval too; once Failover passes,
// the call ends with that code.
func TestAuthorizationChangedSentAgain(t *testing.T) {
	throughTwo(t, authorizationChanged, "a submission", func(c *Client, ctx context.Context) (*IntentResponse, error) {
		return c.Submit(ctx, []byte(`{}`), nil, 0)
	})
	_, _, ctx := throughTwo(t, authorizationChanged, "an approval", func(c *Client, ctx context.Context) (*IntentResponse, error) {
		return c.Approve(ctx, []byte(`{}`))
	})

	always := httptest.NewServer(answering(new(atomic.Int64), authorizationChanged))
	defer always.Close()
	c := New(always.URL, "")
	c.Failover = 300 * time.Millisecond
	_, err := c.Submit(ctx, []byte(`{}`), nil, 0)
	var ae *Error
	if !errors.As(err, &ae) || ae.Code != "authorization_changed" || ae.Status != http.StatusServiceUnavailable {
		t.Fatalf("a submission answered authorization_changed until Failover passed: %v, want that code", err)
	}
}

// TestLoneServerGoneFailsAtOnce: when nothing listens at the only server's
// address, the call fails with the connection's error rather than trying
// until Failover passes.
func TestLoneServerGoneFailsAtOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := New("http://"+addr, "")
	c.Failover = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.Submit(ctx, []byte(`{}`), nil, 0)
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" || ctx.Err() != nil {
		t.Fatalf("a submission to a closed port: %v (context: %v), want the dial's error at once", err, ctx.Err())
	}
}

// TestWrittenApprovalNotResent: a connection that breaks after the approval
// was written may have carried it to the server: it is not sent again.
func TestWrittenApprovalNotResent(t *testing.T) {
	var seen atomic.Int64
	srv := httptest.NewServer(answering(&seen, func(w http.ResponseWriter) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}, completed))
	defer srv.Close()
	c := New(srv.URL, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Approve(ctx, []byte(`{}`)); err == nil || seen.Load() != 1 {
		t.Fatalf("an approval whose connection broke after it was written: %v after %d requests, want an error after 1", err, seen.Load())
	}
}

// TestMisconfiguredFailsAtOnce: a TLS handshake that fails on what the
// client was given (a CA that did not issue the server's certificate, a
// plain-HTTP server at an https address) is not tried again, even for a
// read with one server: sending again cannot mend it.
func TestMisconfiguredFailsAtOnce(t *testing.T) {
	var seen atomic.Int64
	tlsSrv := httptest.NewTLSServer(answering(&seen, completed))
	defer tlsSrv.Close()
	plain := httptest.NewServer(answering(&seen, completed))
	defer plain.Close()
	for _, addr := range []string{tlsSrv.URL, "https://" + strings.TrimPrefix(plain.URL, "http://")} {
		c := New(addr, "")
		c.Failover = time.Hour
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := c.Intent(ctx, "int-1", 0)
		if err == nil || ctx.Err() != nil || !misconfigured(err) {
			t.Fatalf("%s: %v (context: %v), want the handshake's error at once", addr, err, ctx.Err())
		}
		cancel()
	}
	if seen.Load() != 0 {
		t.Fatalf("the servers saw %d requests, want none", seen.Load())
	}
}
