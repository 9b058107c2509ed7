package controlplane

import (
	"net/http"
	"time"
)

// timeSubmissions observes how long this server takes to answer each
// submission (POST /v1/intents), from its handler's start to its answer,
// by answer: "overloaded" for a 429, "admitted" for a 200, "other" for the
// rest (writ_submission_seconds). A refusal does no verification and waits
// for no commit: its time says how cheaply the excess is shed.
func (s *Server) timeSubmissions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/intents" {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		answer := "other"
		switch sw.status {
		case http.StatusTooManyRequests:
			answer = "overloaded"
		case http.StatusOK, 0:
			answer = "admitted"
		}
		s.metrics.submitSeconds.WithLabelValues(answer).Observe(time.Since(start).Seconds())
	})
}

// statusWriter remembers the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
