package protocol

// NodeView is an enrolled node as GET /v1/nodes and GET /v1/nodes/{id} show
// it to the admin: what it is, what it runs and where it stands, never its
// keys. Times are RFC 3339 (FormatTime).
type NodeView struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels"`
	TokenLabels map[string]string `json:"token_labels"`
	Status      string            `json:"status"`
	OS          string            `json:"os"`
	Arch        string            `json:"arch"`
	Version     string            `json:"version"`
	Tiers       []string          `json:"tiers"`
	Tools       map[string]string `json:"tools"`
	Concurrency int               `json:"concurrency"`
	InFlight    int               `json:"in_flight"`
	// Server is the server holding the node's session, if any.
	Server     string `json:"server,omitzero"`
	EnrolledAt string `json:"enrolled_at"`
	UpdatedAt  string `json:"updated_at"`
	// LastHeartbeat is known only to the server holding the session.
	LastHeartbeat string `json:"last_heartbeat,omitzero"`
}

// NodeList is the answer of GET /v1/nodes.
type NodeList struct {
	Nodes []NodeView `json:"nodes"`
}
