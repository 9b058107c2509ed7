package nodeagent

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// JoinToken is a parsed join token: "wj1.<id>.<secret>.<pin>", where pin is
// the hex SHA-256 of the cluster CA's SubjectPublicKeyInfo.
type JoinToken struct {
	raw string
	ID  string
	Pin []byte
}

// ErrBadToken is returned for a string that is not a join token.
var ErrBadToken = errors.New("nodeagent: not a join token (wj1.<id>.<secret>.<ca pin>)")

// ParseJoinToken checks a join token's form. Its secret is only sent to the
// server after the server proved it holds the pinned CA.
func ParseJoinToken(s string) (JoinToken, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) != 4 || parts[0] != "wj1" || parts[1] == "" {
		return JoinToken{}, ErrBadToken
	}
	if secret, err := base64.RawURLEncoding.DecodeString(parts[2]); err != nil || len(secret) != 32 {
		return JoinToken{}, ErrBadToken
	}
	pin, err := hex.DecodeString(parts[3])
	if err != nil || len(pin) != sha256.Size {
		return JoinToken{}, ErrBadToken
	}
	return JoinToken{raw: strings.TrimSpace(s), ID: parts[1], Pin: pin}, nil
}

// Enroll proves a join token to the server at base (an http:// URL only on
// loopback, in dev mode; https:// otherwise), and writes the node's identity
// to dir: keys generated here, the certificate the cluster CA issued, and the
// CA, which must match the token's pin.
func Enroll(ctx context.Context, base, token, name, dir string) (*Identity, error) {
	tok, err := ParseJoinToken(token)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("nodeagent: server %q must be an http(s) URL", base)
	}
	if _, err := LoadIdentity(dir); err == nil {
		return nil, fmt.Errorf("nodeagent: %s already holds an enrolled node", dir)
	}
	ca, err := fetchCA(ctx, base, tok.Pin)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	pub, signKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	tlsKey, csr, err := newTLSKey(name)
	if err != nil {
		return nil, err
	}
	body, _ := jsonx.Marshal(protocol.EnrollRequest{Token: tok.raw, Name: name, Public: pub, CSR: csr})
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/v1/enroll", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("nodeagent: enroll: %w", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		var e protocol.ErrorResponse
		json.Unmarshal(data, &e)
		return nil, fmt.Errorf("nodeagent: enrollment refused: %s: %s", e.Error.Code, e.Error.Message)
	}
	var out protocol.EnrollResponse
	if err := json.Unmarshal(data, &out); err != nil || out.Node == "" || len(out.Chain) == 0 {
		return nil, errors.New("nodeagent: enrollment answer is unreadable")
	}
	return saveIdentity(dir, out.Node, name, signKey, tlsKey, out.Chain, ca)
}

// fetchCA gets the cluster CA and accepts it only if its public key hashes to
// the pin. The connection is not yet trusted, so nothing secret is sent on it.
func fetchCA(ctx context.Context, base string, pin []byte) (*x509.Certificate, error) {
	client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}} // checked by the pin below
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/v1/enroll/ca", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("nodeagent: fetching the cluster CA: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	ca, err := parseCertPEM(b)
	if err != nil {
		return nil, fmt.Errorf("nodeagent: the server sent no CA certificate (HTTP %d)", resp.StatusCode)
	}
	sum := sha256.Sum256(ca.RawSubjectPublicKeyInfo)
	if subtle.ConstantTimeCompare(sum[:], pin) != 1 {
		return nil, errors.New("nodeagent: the server's CA does not match the join token's pin; refusing to enroll")
	}
	return ca, nil
}

func saveIdentity(dir, node, name string, signKey ed25519.PrivateKey, tlsKey *ecdsa.PrivateKey, chain [][]byte, ca *x509.Certificate) (*Identity, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(signKey)
	if err != nil {
		return nil, err
	}
	if err := writeAtomic(filepath.Join(dir, fileSignKey), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	if err := writeAtomic(filepath.Join(dir, fileCA), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), 0o644); err != nil {
		return nil, err
	}
	if _, err := saveCert(dir, tlsKey, chain); err != nil {
		return nil, err
	}
	meta, _ := jsonx.Marshal(map[string]string{"node": node, "name": name})
	// node.json last: its presence means the enrollment is complete.
	if err := writeAtomic(filepath.Join(dir, fileNode), meta, 0o600); err != nil {
		return nil, err
	}
	return LoadIdentity(dir)
}
