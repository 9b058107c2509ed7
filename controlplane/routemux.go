package controlplane

import "net/http"

// routeMux is the API's ServeMux with a record of every pattern registered
// on it, in order: the access matrix (access.go) must name each one, and its
// test walks them all.
type routeMux struct {
	mux      *http.ServeMux
	patterns []string
}

func newRouteMux() *routeMux { return &routeMux{mux: http.NewServeMux()} }

// Handle registers h for pattern and records the pattern.
func (m *routeMux) Handle(pattern string, h http.Handler) {
	m.patterns = append(m.patterns, pattern)
	m.mux.Handle(pattern, h)
}

// HandleFunc registers h for pattern and records the pattern.
func (m *routeMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(h))
}

// Patterns returns the patterns registered, in order.
func (m *routeMux) Patterns() []string { return append([]string(nil), m.patterns...) }
