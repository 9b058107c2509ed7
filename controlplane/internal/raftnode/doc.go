// Package raftnode runs one server's Raft: hashicorp/raft with LogStore (one
// bbolt file) as the durable log and stable store, file snapshots, and a
// transport over mutual TLS that admits only servers of the cluster.
package raftnode
