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

// nodesAPI is the nodes area of the API: the fleet's nodes, what the admin
// does to them, and enrollment (join tokens, the cluster CA, a node's
// enrollment). Its handlers are in nodesapi.go and enroll.go.
type nodesAPI struct{ srv *Server }

// routes registers the nodes area.
func (ep nodesAPI) routes(mux *routeMux) {
	au := ep.srv.auth()
	mux.HandleFunc("GET /v1/nodes", au.adminJSON(ep.handleNodes))
	mux.HandleFunc("GET /v1/nodes/{id}", au.adminJSON(ep.handleNode))
	mux.HandleFunc("POST /v1/admin/nodes/{id}/{action}", au.admin(ep.handleNodeAction))
	mux.HandleFunc("POST /v1/admin/join-tokens", au.adminJSON(ep.handleJoinToken))
	mux.HandleFunc("GET /v1/enroll/ca", ep.handleCA)
	mux.HandleFunc("POST /v1/enroll", ep.handleEnroll)
}

func (ep nodesAPI) view(n fsm.Node) NodeView {
	v := NodeView{ID: n.ID, Name: n.Name, Labels: n.Labels, TokenLabels: n.TokenLabels, Status: n.Status, OS: n.OS, Arch: n.Arch, Version: n.Version,
		Tiers: n.Tiers, Tools: n.Tools, Concurrency: n.Concurrency, InFlight: n.InFlight, Server: n.Server,
		EnrolledAt: protocol.FormatTime(n.EnrolledAt), UpdatedAt: protocol.FormatTime(n.UpdatedAt)}
	v.LastHeartbeat = ep.lastHeartbeat(n.ID, n.Server)
	return v
}

func (ep nodesAPI) handleNodes(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	nodes := ep.srv.reads.Nodes()
	out := make([]NodeView, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, ep.view(n))
	}
	return protocol.NodeList{Nodes: out}, nil
}

func (ep nodesAPI) handleNode(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	n, ok := ep.srv.reads.Node(r.PathValue("id"))
	if !ok {
		return nil, refusal(protocol.CodeNotFound, "no such node")
	}
	return ep.view(n), nil
}

// handleNodeAction drains, undrains ("ready") or revokes a node. A revoked
// node's session is closed by the server holding it as soon as it applies
// the change, and the node can never connect or enroll under that id again.
func (ep nodesAPI) handleNodeAction(w http.ResponseWriter, r *http.Request) *apiError {
	status := map[string]string{"drain": fsm.NodeDraining, "ready": fsm.NodeReady, "revoke": fsm.NodeRevoked}[r.PathValue("action")]
	if status == "" {
		return refusal(protocol.CodeNotFound, "action must be drain, ready or revoke")
	}
	return ep.srv.adminApply(r.Context(), fsm.MsgNodeStatus, fsm.NodeStatus{At: ep.srv.now(), Node: r.PathValue("id"), Status: status})
}

// adminJSON wraps a handler that answers with a body, behind the admin token.
func (au auth) adminJSON(h func(http.ResponseWriter, *http.Request) (any, *apiError)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !au.adminToken(token) {
			if au.limitFailure(w, r) { // counted as any failed authentication
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
	n, ok := s.reads.Node(id)
	if !ok {
		return NodeView{}, false
	}
	return nodesAPI{s}.view(n), true
}
