package client

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/url"

	"github.com/writhq/writ/protocol"
)

// Output is the captured output of an intent's result, as GET
// /v1/intents/{id}/output serves it: Data is the bytes themselves, checked
// against the captured hash and size the answer names. To tie them to the
// node's signature, check Data with the signed result of the intent's
// receipt (protocol.Result.CheckOutput; writ verify receipt --output).
type Output struct {
	protocol.OutputResponse
	Data []byte
}

// Output returns an intent's captured output. The read is signed (SignReads)
// or carries an admin token; another tenant's intent, an intent without a
// result, and an output past the cluster's retention are all not_found.
func (c *Client) Output(ctx context.Context, id string) (*Output, error) {
	var r protocol.OutputResponse
	if err := c.do(ctx, http.MethodGet, "/v1/intents/"+url.PathEscape(id)+"/output", nil, &r); err != nil {
		return nil, err
	}
	data, err := protocol.DecodeOutput(r.Output, r.OutputEncoding)
	if err != nil {
		return nil, fmt.Errorf("client: output of %s: %w", id, err)
	}
	if int64(len(data)) != r.CapturedBytes || protocol.HashBytes(data) != r.CapturedHash {
		return nil, fmt.Errorf("client: output of %s: %d bytes with hash %s, not the %d bytes of %s the server names",
			id, len(data), protocol.FormatHash(sha256.Sum256(data)), r.CapturedBytes, r.CapturedHash)
	}
	return &Output{OutputResponse: r, Data: data}, nil
}

// ResponseOutput returns the output an intent response carries beside its
// result (a signed read's answer), decoded; ok is false when it carries none.
func ResponseOutput(r *IntentResponse) (data []byte, ok bool, err error) {
	if r == nil || r.Output == nil {
		return nil, false, nil
	}
	data, err = protocol.DecodeOutput(*r.Output, r.OutputEncoding)
	return data, err == nil, err
}
