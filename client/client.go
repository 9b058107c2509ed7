package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/writhq/writ/protocol"
)

// Client talks to a Writ control plane's HTTP API.
type Client struct {
	base   string
	http   *http.Client
	token  string
	reader *readKey
}

// New returns a client for the server at addr (such as http://127.0.0.1:7070).
// token, when set, is sent as the admin bearer token.
func New(addr, token string) *Client {
	return &Client{base: strings.TrimRight(addr, "/"), token: token, http: &http.Client{Timeout: 90 * time.Second}}
}

// TrustCA makes the client trust, for https addresses, the server
// certificates issued by the PEM-encoded CA (the cluster CA), and only those.
func (c *Client) TrustCA(pemCerts []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCerts) {
		return errors.New("client: no certificate in the CA file")
	}
	c.http = &http.Client{Timeout: c.http.Timeout, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
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
	body := map[string]json.RawMessage{"intent": intent}
	if len(approval) > 0 {
		body["approval"] = approval
	}
	b, _ := json.Marshal(body)
	var r IntentResponse
	return &r, c.do(ctx, http.MethodPost, "/v1/intents"+waitQuery(wait), b, &r)
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
func (c *Client) Receipt(ctx context.Context, index uint64) (json.RawMessage, error) {
	var r json.RawMessage
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

func waitQuery(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return "?wait=" + d.String()
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.reader != nil && method == http.MethodGet {
		at := protocol.ReadTime(time.Now())
		req.Header.Set(protocol.HeaderTenant, c.reader.tenant)
		req.Header.Set(protocol.HeaderKeyID, c.reader.keyID)
		req.Header.Set(protocol.HeaderTime, at)
		req.Header.Set(protocol.HeaderSignature, protocol.SignRead(c.reader.secret, method, req.URL.RequestURI(), c.reader.tenant, c.reader.keyID, at))
	} else if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e protocol.ErrorResponse
		if json.Unmarshal(b, &e) != nil || e.Error.Code == "" {
			return &Error{Status: resp.StatusCode, Code: "internal", Message: strings.TrimSpace(string(b))}
		}
		return &Error{Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}
