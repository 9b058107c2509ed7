package fsm

import (
	"fmt"
	"slices"
	"strings"
)

// maxExclusions bounds how many nodes Exclusions names.
const maxExclusions = 8

// Exclusions says why no ready node took the intent id: each ready node (in
// id order, at most maxExclusions of them) with the first reason it was
// excluded — the tool missing from its allowlist, a manifest hash that
// differs from the registered one, the tool's tier unavailable there, labels
// that do not fit the tool's selector or the intent's target, not the
// target, or at capacity — and how many nodes are not ready. It reads the
// state as it is now, for the answer an orchestrator gets; receipts keep the
// FSM's own message. "" when the intent or its tool is unknown.
func (rd Reader) Exclusions(id string) string {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	s := rd.f.state
	in := s.Intents[id]
	if in == nil {
		return ""
	}
	tool := s.Tools[in.Tool]
	if tool == nil {
		return ""
	}
	var named []string
	ready, notReady := 0, 0
	for _, nid := range sortedKeys(s.Nodes) {
		n := s.Nodes[nid]
		if n.Status != NodeReady {
			notReady++
			continue
		}
		ready++
		if len(named) < maxExclusions {
			named = append(named, n.ID+": "+exclusion(n, in, tool))
		}
	}
	var b strings.Builder
	switch ready {
	case 0:
		b.WriteString("no node is ready")
	default:
		fmt.Fprintf(&b, "%d ready: %s", ready, strings.Join(named, "; "))
		if ready > len(named) {
			fmt.Fprintf(&b, "; and %d more", ready-len(named))
		}
	}
	if notReady > 0 {
		fmt.Fprintf(&b, " (%d not ready: down, draining or revoked)", notReady)
	}
	return b.String()
}

// exclusion is why the ready node n does not take in now, checked in the
// order eligible checks it, then its load.
func exclusion(n *Node, in *Intent, tool *Tool) string {
	h, listed := n.Tools[tool.Name]
	switch {
	case !listed:
		return "tool " + tool.Name + " is not in its allowlist"
	case h != tool.Hash:
		return "its manifest of " + tool.Name + " differs from the registered one (hash " + short(h) + ", registered " + short(tool.Hash) + ")"
	case !slices.Contains(n.Tiers, tool.Tier):
		return "tier " + tool.Tier + " is not available there"
	case !subset(tool.Selector, n.Labels):
		return "its labels do not fit the tool's node_selector"
	case in.Target != nil && in.Target.Node != "" && in.Target.Node != n.ID && in.Target.Node != n.Name:
		return "not the intent's target node"
	case in.Target != nil && !subset(in.Target.Labels, n.Labels):
		return "its labels do not fit the intent's target"
	case n.Concurrency > 0 && n.InFlight >= n.Concurrency:
		return fmt.Sprintf("at capacity (%d of %d running)", n.InFlight, n.Concurrency)
	}
	return "eligible now"
}

// short is a hash's first 12 hex digits, for a message.
func short(h string) string {
	h = strings.TrimPrefix(h, "sha256:")
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
