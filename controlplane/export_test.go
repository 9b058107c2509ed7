package controlplane

// RoutePatterns returns every route s serves: the API's, then the
// dashboard's.
func RoutePatterns(s *Server) []string {
	return append(s.mux.Patterns(), s.dash.Routes()...)
}
