package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Credentials is the credentials file `writ dev` and `make cluster` write
// (PROTOCOL.md §6): where the servers are and the keys of tenant "dev".
// Addrs, when present, lists every server of a cluster; Addr is the first.
type Credentials struct {
	Addr         string   `json:"addr"`
	Addrs        []string `json:"addrs,omitempty"`
	CAFile       string   `json:"ca_file,omitempty"`
	Tenant       string   `json:"tenant"`
	Orchestrator struct {
		KeyID  string `json:"key_id"`
		Secret string `json:"secret"`
	} `json:"orchestrator"`
	Approver struct {
		KeyID    string `json:"key_id"`
		Approver string `json:"approver"`
		Seed     string `json:"seed"`
	} `json:"approver"`
	AdminToken string `json:"admin_token"`
	LedgerKey  string `json:"ledger_key"`
}

// LoadCredentials reads a credentials file.
func LoadCredentials(path string) (*Credentials, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Credentials
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if c.Addr == "" && len(c.Addrs) == 0 {
		return nil, errors.New(path + ": neither addr nor addrs")
	}
	return &c, nil
}

// Servers is every server the file names: addrs, or addr alone.
func (c *Credentials) Servers() []string {
	if len(c.Addrs) > 0 {
		return c.Addrs
	}
	return []string{c.Addr}
}

// Client returns an admin client for every server the file names, trusting
// its CA file when it names one.
func (c *Credentials) Client() (*Client, error) {
	cl := NewCluster(c.Servers(), c.AdminToken)
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, err
		}
		if err := cl.TrustCA(pem); err != nil {
			return nil, err
		}
	}
	return cl, nil
}
