package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// Client talks to a Writ control plane's HTTP API.
type Client struct {
	servers []string
	http    *http.Client
	token   string
	reader  *readKey
	// Failover bounds how long a request tries other servers when one
	// cannot be reached or answers 503 no_leader (DefaultFailover).
	Failover time.Duration

	mu  sync.Mutex
	cur int // the server that answered last
	// NoProofWait makes Submit with a wait return as soon as the intent is
	// final, with its receipt but without waiting for a checkpoint to prove
	// it (?proof=false); Receipt fetches the proof later.
	NoProofWait bool
}

// New returns a client for the server at addr (such as http://127.0.0.1:7070),
// or for a cluster: addr may list servers separated by commas. token, when
// set, is sent as the admin bearer token.
func New(addr, token string) *Client {
	return NewCluster([]string{addr}, token)
}

// NewCluster returns a client for the servers of one cluster. A request goes
// to the server that answered last; when it cannot be reached or answers 503
// no_leader, the request goes to the next — if it is safe to send again
// (see Client.do).
func NewCluster(addrs []string, token string) *Client {
	return &Client{servers: splitAddrs(addrs), token: token, http: &http.Client{Timeout: 90 * time.Second, Transport: transport(nil)}, Failover: DefaultFailover}
}

// MaxConnsIdle is how many idle connections a client keeps to each server.
// An orchestrator submits from many goroutines at once; with net/http's
// default of 2, all but two of them would open a new connection (and make a
// TLS handshake) for every request.
const MaxConnsIdle = 256

func transport(tc *tls.Config) *http.Transport {
	return &http.Transport{
		TLSClientConfig: tc, MaxIdleConnsPerHost: MaxConnsIdle, MaxIdleConns: 4 * MaxConnsIdle,
		IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second,
		DialContext: (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	}
}

// TrustCA makes the client trust, for https addresses, the server
// certificates issued by the PEM-encoded CA (the cluster CA), and only those.
func (c *Client) TrustCA(pemCerts []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCerts) {
		return errors.New("client: no certificate in the CA file")
	}
	c.http = &http.Client{Timeout: c.http.Timeout, Transport: transport(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})}
	return nil
}

// IntentResponse is the API's answer about an intent.
type IntentResponse = protocol.IntentResponse

// Error is an API error: the HTTP status and the stable code.
type Error struct {
	Status  int
	Code    protocol.Code
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%d): %s", e.Code, e.Status, e.Message) }

// Submit posts a signed intent, with an approval when one is given, and
// waits up to wait for a final state.
func (c *Client) Submit(ctx context.Context, intent, approval []byte, wait time.Duration) (*IntentResponse, error) {
	// The body is written around the signed bytes as they are: they are sent
	// once, not re-encoded, and each must be one JSON value, so that nothing
	// in them can add members to the body.
	if !oneValue(intent) || (len(approval) > 0 && !oneValue(approval)) {
		return nil, errors.New("client: the intent and the approval must each be one JSON value")
	}
	b := make([]byte, 0, len(intent)+len(approval)+24)
	b = append(append(b, `{"intent":`...), intent...)
	if len(approval) > 0 {
		b = append(append(b, `,"approval":`...), approval...)
	}
	b = append(b, '}')
	var r IntentResponse
	q := waitQuery(wait)
	if c.NoProofWait && q != "" {
		q += "&proof=false"
	}
	return &r, c.do(ctx, http.MethodPost, "/v1/intents"+q, b, &r)
}

// oneValue reports whether b is one JSON value, as encoding/json.Valid does
// (duplicate names and invalid UTF-8 are the server's to refuse), at a
// fraction of its cost.
func oneValue(b []byte) bool {
	return jsontext.Value(b).IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
}

// SignReads makes the client sign its reads of intents with an orchestrator
// key of tenant (protocol.VerifyRead); without it, reads carry the admin
// token, if any.
func (c *Client) SignReads(tenant, keyID string, secret []byte) {
	c.reader = &readKey{tenant, keyID, secret}
}

type readKey struct {
	tenant, keyID string
	secret        []byte
}

// Intent returns an intent's state, waiting up to wait for a final one. The
// read is signed (SignReads) or carries the admin token.
func (c *Client) Intent(ctx context.Context, id string, wait time.Duration) (*IntentResponse, error) {
	var r IntentResponse
	return &r, c.do(ctx, http.MethodGet, "/v1/intents/"+url.PathEscape(id)+waitQuery(wait), nil, &r)
}

// Approve posts a signed approval.
func (c *Client) Approve(ctx context.Context, approval []byte) (*IntentResponse, error) {
	var r IntentResponse
	return &r, c.do(ctx, http.MethodPost, "/v1/approvals", approval, &r)
}

// Receipt returns GET /v1/receipts/{index}: the receipt, its inclusion proof
// and the signed checkpoint it is proved against, as JSON.
func (c *Client) Receipt(ctx context.Context, index uint64) (jsontext.Value, error) {
	var r jsontext.Value
	return r, c.do(ctx, http.MethodGet, fmt.Sprintf("/v1/receipts/%d", index), nil, &r)
}

// Checkpoint is GET /v1/ledger/checkpoint.
type Checkpoint struct {
	Checkpoint  string `json:"checkpoint"`
	Size        int64  `json:"size"`
	Root        string `json:"root"`
	VerifierKey string `json:"verifier_key"`
}

// Checkpoint returns the ledger's latest signed checkpoint.
func (c *Client) Checkpoint(ctx context.Context) (*Checkpoint, error) {
	var r Checkpoint
	return &r, c.do(ctx, http.MethodGet, "/v1/ledger/checkpoint", nil, &r)
}

// Consistency returns the consistency proof between two tree sizes.
func (c *Client) Consistency(ctx context.Context, from, to int64) ([]string, error) {
	var r struct {
		Proof []string `json:"proof"`
	}
	err := c.do(ctx, http.MethodGet, fmt.Sprintf("/v1/ledger/consistency?from=%d&to=%d", from, to), nil, &r)
	return r.Proof, err
}

// Health returns the server's health answer.
func (c *Client) Health(ctx context.Context) (map[string]any, error) {
	var r map[string]any
	return r, c.do(ctx, http.MethodGet, "/v1/health", nil, &r)
}

// Admin sends an admin call (PUT or DELETE under /v1/admin/).
func (c *Client) Admin(ctx context.Context, method, path string, body []byte) error {
	return c.do(ctx, method, "/v1/admin/"+strings.TrimLeft(path, "/"), body, nil)
}

// AdminJSON sends an admin call and decodes its JSON answer into out.
func (c *Client) AdminJSON(ctx context.Context, method, path string, body []byte, out any) error {
	return c.do(ctx, method, "/v1/admin/"+strings.TrimLeft(path, "/"), body, out)
}

func waitQuery(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return "?wait=" + d.String()
}

// do sends one request. On a connection failure, or 503 no_leader, it tries
// the next server — always when the request never left (the connection could
// not be made, or was closed before the request was written), otherwise only
// when the request is safe to resend (resendable) — until Failover passes;
// on 503 authorization_changed, which applied nothing, it sends any request
// again the same way.
// With one server it tries that server again, after a pause, in the same
// cases but one: a server that cannot be connected to at all (nothing
// listens) fails the request at once.
func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	if len(c.servers) == 0 {
		return errors.New("client: no server address")
	}
	deadline := time.Now().Add(c.Failover)
	c.mu.Lock()
	start := c.cur
	c.mu.Unlock()
	for round := 0; ; round++ {
		var err error
		for k := range c.servers {
			i := (start + k) % len(c.servers)
			var retry bool
			retry, err = c.once(ctx, c.servers[i], method, path, body, out)
			if !retry {
				var ae *Error
				switch {
				case err == nil:
					c.mu.Lock()
					c.cur = i
					c.mu.Unlock()
				case !errors.As(err, &ae) && len(c.servers) > 1:
					// No answer (the caller's deadline passed, the
					// connection broke after the request left): the next
					// call starts with the next server, not again with one
					// that may hang every request.
					c.mu.Lock()
					c.cur = (i + 1) % len(c.servers)
					c.mu.Unlock()
				}
				return err
			}
		}
		if len(c.servers) == 1 && refused(err) {
			return err // one server, and it is not there
		}
		pause := backoff(round)
		if time.Now().Add(pause).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

// once sends the request to one server and says whether another may be tried.
func (c *Client) once(ctx context.Context, base, method, path string, body []byte, out any) (retry bool, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.reader != nil && (method == http.MethodGet || method == http.MethodPost && cancelPath(path)) {
		at := protocol.ReadTime(time.Now())
		req.Header.Set(protocol.HeaderTenant, c.reader.tenant)
		req.Header.Set(protocol.HeaderKeyID, c.reader.keyID)
		req.Header.Set(protocol.HeaderTime, at)
		req.Header.Set(protocol.HeaderSignature, protocol.SignRead(c.reader.secret, method, req.URL.RequestURI(), c.reader.tenant, c.reader.keyID, at))
	} else if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	var written atomic.Bool
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { written.Store(true) },
	}))
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil || misconfigured(err) {
			return false, err
		}
		return !written.Load() || resendable(method, path), err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return resendable(method, path), err
	}
	if resp.StatusCode >= 300 {
		var e protocol.ErrorResponse
		if json.Unmarshal(b, &e) != nil || e.Error.Code == "" {
			if resp.StatusCode == http.StatusBadRequest && bytes.Contains(b, []byte("HTTP request to an HTTPS server")) {
				return false, fmt.Errorf("client: %s serves TLS: use https:// and trust its CA", base)
			}
			return false, &Error{Status: resp.StatusCode, Code: protocol.CodeInternal, Message: strings.TrimSpace(string(b))}
		}
		aerr := &Error{Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message}
		if resp.StatusCode != http.StatusServiceUnavailable {
			return false, aerr
		}
		// authorization_changed: keys, tools or the policy set changed
		// under the server's every check; nothing was recorded (an
		// approval's nonce is not consumed), so any request may be sent
		// again, to be checked against the new state.
		return e.Error.Code == protocol.CodeAuthorizationChanged || e.Error.Code == "no_leader" && resendable(method, path), aerr
	}
	if out == nil {
		return false, nil
	}
	if r, ok := out.(*IntentResponse); ok {
		// The most frequent answer, decoded with encoding/json/v2 (about
		// twice as fast); the server writes valid UTF-8 without duplicate
		// names, which v2 requires.
		return false, json.Unmarshal(b, r)
	}
	// out may be a caller's own type (AdminJSON): its fields match the
	// server's member names without regard to case, as they always have.
	return false, jsonx.UnmarshalLenient(b, out)
}

// CreateJoinToken issues a join token for a node with labels, valid for ttl.
func (c *Client) CreateJoinToken(ctx context.Context, labels map[string]string, ttl time.Duration) (*protocol.JoinTokenResponse, error) {
	body, err := jsonx.Marshal(protocol.JoinTokenRequest{Labels: labels, TTLSeconds: int64(ttl / time.Second)})
	if err != nil {
		return nil, err
	}
	var out protocol.JoinTokenResponse
	return &out, c.do(ctx, "POST", "/v1/admin/join-tokens", body, &out)
}

// Nodes lists the enrolled nodes (admin), as the API shows them.
func (c *Client) Nodes(ctx context.Context) ([]protocol.NodeView, error) {
	var out protocol.NodeList
	return out.Nodes, c.do(ctx, "GET", "/v1/nodes", nil, &out)
}

// Node shows one node (admin).
func (c *Client) Node(ctx context.Context, id string) (*protocol.NodeView, error) {
	var out protocol.NodeView
	if err := c.do(ctx, "GET", "/v1/nodes/"+url.PathEscape(id), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// NodeAction drains, undrains ("ready") or revokes a node (admin).
func (c *Client) NodeAction(ctx context.Context, id, action string) error {
	return c.Admin(ctx, "POST", "nodes/"+url.PathEscape(id)+"/"+url.PathEscape(action), nil)
}

// CloseIdleConnections closes the connections kept open for reuse.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }
