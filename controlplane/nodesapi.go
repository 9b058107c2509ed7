package controlplane

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/protocol"
)

// NodeView is a node as the API shows it: never its keys.
type NodeView = protocol.NodeView

func (s *Server) nodeRoutes(mux *routeMux) {
	mux.HandleFunc("GET /v1/nodes", s.adminJSON(s.handleNodes))
	mux.HandleFunc("GET /v1/nodes/{id}", s.adminJSON(s.handleNode))
	mux.HandleFunc("POST /v1/admin/nodes/{id}/{action}", s.admin(s.handleNodeAction))
}

func (s *Server) view(n fsm.Node) NodeView {
	v := NodeView{ID: n.ID, Name: n.Name, Labels: n.Labels, TokenLabels: n.TokenLabels, Status: n.Status, OS: n.OS, Arch: n.Arch, Version: n.Version,
		Tiers: n.Tiers, Tools: n.Tools, Concurrency: n.Concurrency, InFlight: n.InFlight, Server: n.Server,
		EnrolledAt: protocol.FormatTime(n.EnrolledAt), UpdatedAt: protocol.FormatTime(n.UpdatedAt)}
	v.LastHeartbeat = s.lastHeartbeat(n.ID, n.Server)
	return v
}

func (s *Server) handleNodes(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	nodes := s.fsm.Nodes()
	out := make([]NodeView, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, s.view(n))
	}
	return protocol.NodeList{Nodes: out}, nil
}

func (s *Server) handleNode(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	n, ok := s.fsm.Node(r.PathValue("id"))
	if !ok {
		return nil, refusal(protocol.CodeNotFound, "no such node")
	}
	return s.view(n), nil
}

// handleNodeAction drains, undrains ("ready") or revokes a node. A revoked
// node's session is closed by the server holding it as soon as it applies
// the change, and the node can never connect or enroll under that id again.
func (s *Server) handleNodeAction(w http.ResponseWriter, r *http.Request) *apiError {
	status := map[string]string{"drain": fsm.NodeDraining, "ready": fsm.NodeReady, "revoke": fsm.NodeRevoked}[r.PathValue("action")]
	if status == "" {
		return refusal(protocol.CodeNotFound, "action must be drain, ready or revoke")
	}
	return s.adminApply(r.Context(), fsm.MsgNodeStatus, fsm.NodeStatus{At: s.now(), Node: r.PathValue("id"), Status: status})
}

// adminJSON wraps a handler that answers with a body, behind the admin token.
func (s *Server) adminJSON(h func(http.ResponseWriter, *http.Request) (any, *apiError)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !s.adminToken(token) {
			if s.limitFailure(w, r) { // counted as any failed authentication
				return
			}
			writeError(w, protocol.CodeUnauthorized, "an admin token is required")
			return
		}
		v, aerr := h(w, r.WithContext(WithActor(r.Context(), adminTokenActor(token))))
		if aerr != nil {
			writeError(w, aerr.code, aerr.msg)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

func constantEqual(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// Node returns the API view of an enrolled node.
func (s *Server) Node(id string) (NodeView, bool) {
	n, ok := s.fsm.Node(id)
	if !ok {
		return NodeView{}, false
	}
	return s.view(n), true
}
