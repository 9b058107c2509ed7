// Package nodeagent is writ agent: it dials the control plane, re-verifies every
// signed dispatch it receives, and runs the tool in a sandbox exactly once.
package nodeagent
