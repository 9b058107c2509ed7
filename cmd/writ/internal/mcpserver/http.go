package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/writhq/writ/protocol"
)

// MinTokenLen is the shortest bearer token the HTTP transport accepts.
const MinTokenLen = 32

// maxHTTPBody bounds one request body (the SDK's own default).
const maxHTTPBody = mcp.DefaultMaxRequestBodyBytes

// HTTPConfig is the streamable HTTP transport's: the one bearer token that
// opens it (whoever holds it calls tools as Config's tenant and principal)
// and the browser origins allowed besides none.
type HTTPConfig struct {
	Token          string
	AllowedOrigins []string
}

// Validate refuses a token too short to be a secret.
func (c *HTTPConfig) Validate() error {
	if len(c.Token) < MinTokenLen {
		return errors.New("mcp: the HTTP bearer token must be at least 32 characters")
	}
	return nil
}

// Handler is the streamable HTTP transport at any path: a request from a
// browser page of an origin not allowed is refused 403 (the MCP
// specification's DNS rebinding defence; the SDK also refuses a loopback
// request naming another host), one without the bearer token 401; tools/call
// requests are stamped with their id (stampBody) before the SDK reads them.
func (s *Server) Handler(hc HTTPConfig) (http.Handler, error) {
	if err := hc.Validate(); err != nil {
		return nil, err
	}
	want := sha256.Sum256([]byte(hc.Token))
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Logger: s.cfg.Logger, SessionTimeout: 30 * time.Minute, MaxRequestBodyBytes: maxHTTPBody,
		// A sessionless call whose HTTP request ends stops waiting (its
		// client has gone), as a cancelled one does.
		PropagateRequestCancellation: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !slices.Contains(hc.AllowedOrigins, o) {
			httpError(w, http.StatusForbidden, protocol.CodeForbiddenOrigin, "requests from origin "+o+" are not allowed")
			return
		}
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		got := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 || !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="writ mcp"`)
			httpError(w, http.StatusUnauthorized, protocol.CodeUnauthorized, "a bearer token is required (the one in writ mcp's --http-token-file)")
			return
		}
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxHTTPBody+1))
			if err != nil || len(body) > maxHTTPBody {
				httpError(w, http.StatusRequestEntityTooLarge, protocol.CodeMalformed, "the body is unreadable or larger than 4 MiB")
				return
			}
			body = stampBody(body)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
		inner.ServeHTTP(w, r)
	}), nil
}

// ServeHTTP serves the streamable HTTP transport on ln and keeps the tools
// in step with the catalog until ctx ends.
func (s *Server) ServeHTTP(ctx context.Context, ln net.Listener, hc HTTPConfig) error {
	h, err := s.Handler(hc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.Watch(ctx)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func httpError(w http.ResponseWriter, status int, code protocol.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(protocol.ErrorResponse{Error: protocol.ErrorBody{Code: code, Message: msg}})
}
