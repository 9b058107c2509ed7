package controlplane

import (
	"bytes"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// TestWriteJSON: a value that encodes is answered with its status and the
// bytes jsonx.Encode writes; one that cannot be encoded is answered 500
// internal (never an empty or cut 200, and without a Retry-After the
// refused answer had) and logged with its Go types, never its content.
func TestWriteJSON(t *testing.T) {
	ok := protocol.ErrorResponse{Error: protocol.ErrorBody{Code: protocol.CodeNotFound, Message: "<none>"}}
	rec := httptest.NewRecorder()
	writeJSON(rec, http.StatusCreated, ok)
	var want bytes.Buffer
	jsonx.Encode(&want, ok)
	if rec.Code != http.StatusCreated || rec.Body.String() != want.String() || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("an encodable value: %d %q %q, want 201 %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body, want.String())
	}

	var logged bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(prev)
	const secret = "secret-content-4711"
	for name, v := range map[string]any{
		"a channel":     map[string]any{secret: make(chan int)},
		"a function":    struct{ F func() }{func() {}},
		"not a number":  map[string]float64{secret: math.NaN()},
		"a cyclic list": cyclic(secret),
	} {
		logged.Reset()
		rec := httptest.NewRecorder()
		rec.Header().Set("Retry-After", "1")
		writeJSON(rec, http.StatusOK, v)
		var e protocol.ErrorResponse
		if err := jsonx.UnmarshalStrict(rec.Body.Bytes(), &e); err != nil || rec.Code != http.StatusInternalServerError || e.Error.Code != protocol.CodeInternal {
			t.Errorf("%s: %d %q (%v), want 500 internal", name, rec.Code, rec.Body, err)
		}
		if rec.Header().Get("Retry-After") != "" {
			t.Errorf("%s: the 500 keeps Retry-After", name)
		}
		if !strings.Contains(logged.String(), "could not be encoded") {
			t.Errorf("%s: the failure was not logged: %q", name, logged.String())
		}
		if strings.Contains(logged.String(), secret) || strings.Contains(rec.Body.String(), secret) {
			t.Errorf("%s: the content reached the log or the answer: %q %q", name, logged.String(), rec.Body)
		}
	}
}

type cyclicNode struct {
	Name string      `json:"name"`
	Next *cyclicNode `json:"next"`
}

func cyclic(name string) *cyclicNode {
	n := &cyclicNode{Name: name}
	n.Next = n
	return n
}
