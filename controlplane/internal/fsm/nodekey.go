package fsm

// NodeKey returns a copy of the Ed25519 key a node signs its results with,
// and false for a node that is not enrolled or is revoked: what verifying a
// result needs, without copying the rest of the node's record as Node does.
func (r Reader) NodeKey(id string) ([]byte, bool) {
	f := r.f
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, ok := f.state.Nodes[id]
	if !ok || n.Status == NodeRevoked {
		return nil, false
	}
	return append([]byte(nil), n.Public...), true
}
