package controlplane

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"net/http"
	"strings"
	"time"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/protocol"
)

// A join token is "wj1.<id>.<secret>.<pin>": the token's id, its secret
// (32 random bytes, base64url), and the hex SHA-256 of the cluster CA's public
// key, which the agent checks before it trusts anything the server says.
// The control plane keeps only the secret's hash.
const joinTokenPrefix = "wj1"

func (ep nodesAPI) handleJoinToken(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	if ep.srv.fleet == nil {
		return nil, refusal(protocol.CodeNotFound, "this server takes no node sessions")
	}
	var req protocol.JoinTokenRequest
	if aerr := decodeAdmin(w, r, &req); aerr != nil {
		return nil, aerr
	}
	resp, aerr := ep.srv.CreateJoinToken(r.Context(), req.Labels, time.Duration(req.TTLSeconds)*time.Second)
	if aerr != nil {
		return nil, aerr
	}
	return resp, nil
}

// CreateJoinToken issues a one-time join token for a node with labels, usable
// for ttl (0: one hour). Only its hash is stored; the token is returned once.
func (s *Server) CreateJoinToken(ctx context.Context, labels map[string]string, ttl time.Duration) (*protocol.JoinTokenResponse, *apiError) {
	if s.fleet == nil {
		return nil, refusal(protocol.CodeNotFound, "this server takes no node sessions")
	}
	if ttl == 0 {
		ttl = time.Hour
	}
	if ttl < time.Minute || ttl > 7*24*time.Hour {
		return nil, refusal(protocol.CodeMalformed, "ttl must be between 1 minute and 7 days")
	}
	if err := protocol.CheckLabels(labels); err != nil {
		return nil, refusal(protocol.CodeMalformed, err.Error())
	}
	id, secret := make([]byte, 8), make([]byte, 32)
	rand.Read(id)
	rand.Read(secret)
	tok := fsm.PutJoinToken{ID: hex.EncodeToString(id), Hash: protocol.HashBytes(secret), Labels: labels,
		ExpiresAt: s.now().Add(ttl)}
	if tok.Labels == nil {
		tok.Labels = map[string]string{}
	}
	if aerr := s.adminApply(ctx, fsm.MsgPutJoinToken, tok); aerr != nil {
		return nil, aerr
	}
	pin := strings.TrimPrefix(s.fleet.pin, "sha256:")
	return &protocol.JoinTokenResponse{
		Token: joinTokenPrefix + "." + tok.ID + "." + base64.RawURLEncoding.EncodeToString(secret) + "." + pin,
		ID:    tok.ID, Labels: tok.Labels, ExpiresAt: protocol.FormatTime(tok.ExpiresAt),
	}, nil
}

// handleCA serves the cluster CA certificate. It is public: an agent checks
// it against the pin in its join token before trusting it.
func (ep nodesAPI) handleCA(w http.ResponseWriter, r *http.Request) {
	if ep.srv.fleet == nil {
		writeError(w, protocol.CodeNotFound, "this server takes no node sessions")
		return
	}
	w.Header().Set("Content-Type", "application/x-pem-file")
	w.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ep.srv.fleet.ca.Cert.Raw}))
}

// handleEnroll consumes a join token through Raft and certifies the node's
// TLS key. A wrong token counts as an authentication failure of its source.
func (ep nodesAPI) handleEnroll(w http.ResponseWriter, r *http.Request) {
	resp, aerr := ep.enroll(w, r)
	if aerr != nil {
		if authFailure(aerr.code) && ep.srv.auth().limitFailure(w, r) {
			return
		}
		writeError(w, aerr.code, aerr.msg)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (ep nodesAPI) enroll(w http.ResponseWriter, r *http.Request) (*protocol.EnrollResponse, *apiError) {
	if ep.srv.fleet == nil {
		return nil, refusal(protocol.CodeNotFound, "this server takes no node sessions")
	}
	var req protocol.EnrollRequest
	if aerr := decodeAdmin(w, r, &req); aerr != nil {
		return nil, aerr
	}
	parts := strings.Split(req.Token, ".")
	if len(parts) != 4 || parts[0] != joinTokenPrefix {
		return nil, refusal(protocol.CodeInvalidToken, "the join token is not valid")
	}
	secret, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(secret) != 32 {
		return nil, refusal(protocol.CodeInvalidToken, "the join token is not valid")
	}
	if len(req.Public) != ed25519.PublicKeySize {
		return nil, refusal(protocol.CodeMalformed, "public must be a 32-byte Ed25519 key")
	}
	name := req.Name
	if !validID(name) {
		return nil, refusal(protocol.CodeMalformed, "name must be 1-128 characters of [A-Za-z0-9._:-]")
	}
	csr, err := certificateRequest(req.CSR)
	if err != nil {
		return nil, refusal(protocol.CodeMalformed, "csr must be a signed PKCS#10 certificate request")
	}
	// Check before proposing, so that guesses never reach Raft; the FSM
	// checks again and consumes the token exactly once.
	hash := protocol.HashBytes(secret)
	if tok, ok := ep.srv.reads.JoinToken(parts[1]); !ok || !constantEqual(tok.Hash, hash) {
		return nil, refusal(protocol.CodeInvalidToken, "the join token is not valid")
	}
	idb := make([]byte, 8)
	rand.Read(idb)
	node := "node-" + hex.EncodeToString(idb)
	res, err := ep.srv.apply(r.Context(), fsm.MsgEnroll, fsm.Enroll{At: ep.srv.now(), TokenID: parts[1], TokenHash: hash,
		Node: node, Name: name, Public: req.Public})
	if err != nil {
		return nil, raftError(err)
	}
	if res.Err != nil {
		return nil, refusal(res.Err.Code, res.Err.Message)
	}
	chain, err := ep.srv.fleet.issueNode(node, csr, ep.srv.cfg.NodeCertValidity)
	if err != nil {
		return nil, refusal(protocol.CodeInternal, "the node was enrolled but its certificate could not be issued")
	}
	ep.srv.log.Info("node enrolled", "node", node, "name", name)
	return &protocol.EnrollResponse{Node: node, Chain: chain}, nil
}
