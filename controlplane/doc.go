// Package controlplane is writ server: the Raft-replicated service that verifies,
// authorizes and admits intents exactly once, and dispatches them to node agents.
package controlplane
