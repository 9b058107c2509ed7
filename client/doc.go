// Package client is the Go client for orchestrators: it signs intents and talks to
// the control plane's HTTP API.
package client
