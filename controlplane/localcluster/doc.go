// Package localcluster starts an in-process cluster of control-plane
// servers on loopback and holds what benchmarks measure it with: the
// servers of writ server (Raft over mutual TLS, the API over TLS, memberlist
// discovery) in one process, for `writ bench` and for tests of a real
// cluster. It reaches into a server only through controlplane's harness
// (controlplane/internal/harness); nothing here is part of the server's
// API, and the server links none of it.
package localcluster
