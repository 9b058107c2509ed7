package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ALPN is the application protocol of a node session: a QUIC connection with
// mutual TLS between a node agent and a control-plane server.
const ALPN = "writ/1"

// MaxFrameBytes bounds one session frame. A dispatch carries at most an
// intent's params and a result at most its capped output, both far below it.
const MaxFrameBytes = 4 << 20

// The session's frame types. The agent opens one bidirectional stream and
// sends hello; the server answers welcome; then either side sends frames in
// any order until the connection closes.
const (
	FrameHello       = "hello"       // agent → server: who the node is and what it has
	FrameWelcome     = "welcome"     // server → agent: the server and its signing keys
	FrameDispatch    = "dispatch"    // server → agent: a signed dispatch
	FrameResult      = "result"      // agent → server: a signed result
	FrameAck         = "ack"         // server → agent: a result is committed
	FrameReject      = "reject"      // agent → server: a dispatch that could not be read at all
	FrameHeartbeat   = "heartbeat"   // agent → server: alive, with its load
	FrameRenew       = "renew"       // agent → server: a CSR for a new client certificate
	FrameCertificate = "certificate" // server → agent: the renewed certificate
	FrameBye         = "bye"         // server → agent: the session ends, and why
	FrameCancel      = "cancel"      // server → agent: stop a dispatch (CancelDispatch)
)

// Frame is one session message: a type and its body. On the stream it is a
// 4-byte big-endian length followed by that many bytes of JSON.
type Frame struct {
	Type string         `json:"type"`
	Body jsontext.Value `json:"body"`
}

// Hello is the agent's first frame.
type Hello struct {
	Node    string `json:"node"`
	Version string `json:"version"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	// Tiers are the sandbox tiers the agent probed and found working.
	Tiers []string `json:"tiers"`
	// Tools is the node owner's allowlist: what may run on this host.
	Tools []ToolRef `json:"tools"`
	// Concurrency is how many dispatches the node runs at once.
	Concurrency int `json:"concurrency"`
	// Labels are the node owner's own description of the host. Labels its
	// join token gave it are the admin's, and win over these.
	Labels map[string]string `json:"labels,omitempty"`
}

// ToolRef names a tool and the hash of its manifest.
type ToolRef struct {
	Name string `json:"name"`
	Hash string `json:"hash"`
}

// Welcome answers hello. Keys are the server keys that sign dispatches, each
// an X.509 certificate (DER) for an Ed25519 key, issued by the cluster CA to
// writ://server/ID; the agent trusts a key only after checking its chain.
type Welcome struct {
	Server      string      `json:"server"`
	Keys        []ServerKey `json:"keys"`
	HeartbeatMS int64       `json:"heartbeat_ms"`
}

// ServerKey is one dispatch-signing key: its key id and its certificate.
type ServerKey struct {
	KeyID string `json:"key_id"`
	Cert  []byte `json:"cert"`
}

// DispatchFrame carries one signed dispatch, exactly as signed.
type DispatchFrame struct {
	Dispatch jsontext.Value `json:"dispatch"`
}

// ResultFrame carries one signed result, exactly as signed, and beside it
// (for a writ.result/v2) the captured output the result commits to by
// captured_hash and captured_bytes. The output is not signed itself: the
// server checks it against the signed hash before accepting either.
type ResultFrame struct {
	Result jsontext.Value `json:"result"`
	Output []byte         `json:"output,omitzero"`
}

// Ack says that the result of a dispatch is committed (the agent may drop it
// from its outbox), or that it never will be (Error set: the agent drops it
// too, as resending cannot help).
type Ack struct {
	DispatchID string     `json:"dispatch_id"`
	Receipt    *uint64    `json:"receipt,omitzero"`
	Error      *ErrorBody `json:"error,omitzero"`
}

// Reject reports a dispatch the agent could not decode at all (so it has no
// dispatch id to sign a result for).
type Reject struct {
	Error ErrorBody `json:"error"`
}

// Heartbeat is the agent's periodic liveness and load report.
type Heartbeat struct {
	InFlight int `json:"in_flight"`
}

// Renew asks for a new client certificate for the key of the CSR (DER).
type Renew struct {
	CSR []byte `json:"csr"`
}

// Certificate is a client certificate chain (DER, leaf first).
type Certificate struct {
	Chain [][]byte `json:"chain"`
}

// Bye ends a session: revoked, shutting down, a protocol violation, or a
// server of a cluster whose disk is full (no_leader: try another server).
type Bye struct {
	Error ErrorBody `json:"error"`
}

// CancelDispatch asks the node to stop a dispatch it was sent: a tool that
// runs gets SIGTERM, then SIGKILL after a grace period; one not started yet
// never starts. Either way the node signs a result with StatusCanceled (a
// run that ended by itself first keeps the status it ended with). A cancel
// for a dispatch the node has a result for, or never received, changes
// nothing. It comes over the session's mutual TLS from a server of the
// cluster, like the dispatch it names; it can only stop what that server's
// cluster started.
type CancelDispatch struct {
	DispatchID string `json:"dispatch_id"`
}

// ErrFrameTooLarge is returned for a frame past MaxFrameBytes.
var ErrFrameTooLarge = errors.New("protocol: session frame too large")

// WriteFrame writes body as a frame of type t.
func WriteFrame(w io.Writer, t string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	data, err := json.Marshal(Frame{Type: t, Body: b})
	if err != nil {
		return err
	}
	if len(data) > MaxFrameBytes {
		return ErrFrameTooLarge
	}
	buf := make([]byte, 4, 4+len(data))
	binary.BigEndian.PutUint32(buf, uint32(len(data)))
	_, err = w.Write(append(buf, data...))
	return err
}

// ReadFrame reads one frame. The body is left for DecodeBody, so that a reader
// can dispatch on the type first.
func ReadFrame(r io.Reader) (Frame, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return Frame{}, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > MaxFrameBytes {
		return Frame{}, ErrFrameTooLarge
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return Frame{}, err
	}
	var f Frame
	if err := json.Unmarshal(data, &f, json.RejectUnknownMembers(true)); err != nil {
		return Frame{}, fmt.Errorf("protocol: bad session frame: %w", err)
	}
	if f.Type == "" || f.Body.Kind() != '{' {
		return Frame{}, errors.New("protocol: bad session frame: type and object body required")
	}
	return f, nil
}

// DecodeBody strictly decodes a frame's body into v.
func (f Frame) DecodeBody(v any) error {
	if err := json.Unmarshal(f.Body, v, json.RejectUnknownMembers(true)); err != nil {
		return fmt.Errorf("protocol: bad %s frame: %w", f.Type, err)
	}
	return nil
}
