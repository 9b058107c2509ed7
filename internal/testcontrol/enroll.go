package testcontrol

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"strings"

	"github.com/writhq/writ/protocol"
)

// serveCA answers GET /v1/enroll/ca with the CA certificate (PEM), as the
// real server does before the agent trusts anything.
func (c *Control) serveCA(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/x-pem-file")
	w.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.ca.cert.Raw}))
}

// serveEnroll answers POST /v1/enroll: the token must be this fake's (the
// secret compared in constant time), the key an Ed25519 public key, the CSR
// signed by its key; the answer names a new node and carries its chain.
func (c *Control) serveEnroll(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.enrolls++
	c.mu.Unlock()
	var req protocol.EnrollRequest
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err := json.Unmarshal(body, &req); err != nil {
		refuse(w, http.StatusBadRequest, protocol.CodeMalformed, "unreadable enrollment")
		return
	}
	if !c.tokenValid(req.Token) {
		refuse(w, protocol.HTTPStatus(protocol.CodeInvalidToken), protocol.CodeInvalidToken, "the join token is not valid")
		return
	}
	if len(req.Public) != ed25519.PublicKeySize || req.Name == "" {
		refuse(w, http.StatusBadRequest, protocol.CodeMalformed, "a name and an Ed25519 key are required")
		return
	}
	idb := make([]byte, 8)
	rand.Read(idb)
	node := "n-" + hex.EncodeToString(idb)
	chain, err := c.ca.signCSR(node, req.CSR, c.cfg.NodeCertValidity)
	if err != nil {
		refuse(w, http.StatusBadRequest, protocol.CodeMalformed, "bad CSR")
		return
	}
	c.mu.Lock()
	c.nodes[node] = req
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(protocol.EnrollResponse{Node: node, Chain: chain})
}

func (c *Control) tokenValid(tok string) bool {
	want := c.Token()
	return len(tok) == len(want) && subtle.ConstantTimeCompare([]byte(tok), []byte(want)) == 1 && strings.HasPrefix(tok, "wj1.")
}

func refuse(w http.ResponseWriter, status int, code protocol.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(protocol.ErrorResponse{Error: protocol.ErrorBody{Code: code, Message: msg}})
}
