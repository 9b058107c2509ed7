package cli

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
)

// defaultServer is the --server every client command starts from: the
// WRIT_SERVER environment variable (a comma list for a cluster), or writ
// dev's address.
func defaultServer() string {
	if v := os.Getenv("WRIT_SERVER"); v != "" {
		return v
	}
	return "http://127.0.0.1:7070"
}

// serverURLs completes and checks a --server value, a comma list: a URL is
// taken as it is (http or https only), and host:port becomes https://host:port
// when a cluster CA is given (--ca or WRIT_CA), http://host:port otherwise.
func (e *env) serverURLs(server string) (string, error) {
	var out []string
	for _, a := range strings.Split(server, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if !strings.Contains(a, "://") {
			scheme := "http://"
			if e.caFile != "" {
				scheme = "https://"
			}
			a = scheme + a
		}
		u, err := url.Parse(a)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return "", fmt.Errorf("--server %q: give a URL such as http://127.0.0.1:7070 or https://writ.example:7070, or host:port", a)
		}
		out = append(out, u.Scheme+"://"+u.Host)
	}
	if len(out) == 0 {
		return "", errors.New("--server is empty: give a URL or host:port (or set WRIT_SERVER)")
	}
	return strings.Join(out, ","), nil
}

// explain says what to do about the errors a user makes from the command
// line: a server that is not there, a TLS server reached without its CA, a
// plain HTTP server reached as https.
func explain(err error) error {
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%w\nnothing answers at that address: is the server running? (writ dev --data-dir DIR starts one; check --server or WRIT_SERVER)", err)
	case errors.As(err, &ua):
		return fmt.Errorf("%w\nthe server's certificate is not from a CA this command trusts: give the cluster CA with --ca FILE (or WRIT_CA)", err)
	case errors.As(err, &he):
		return fmt.Errorf("%w\nthe server's certificate does not name the host in --server: use the name or address the certificate was issued for", err)
	case errors.Is(err, syscall.ECONNRESET):
		return fmt.Errorf("%w\nthe server closed the connection: if it serves TLS, use https:// with --ca FILE", err)
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Errorf("%w\nthe server speaks plain HTTP: use http:// in --server", err)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w\nthe server did not answer in time: check --server, and that the address is reachable", err)
	}
	return err
}

// agentServers reads an agent's --server values, each a comma list in the
// forms every other command takes: host:port or https://host:port (TLS, the
// CA pinned by the join token), or http://host:port (plain HTTP, for a dev
// server on loopback). It returns the host:port list and whether it is plain;
// plain and TLS servers cannot be mixed.
func agentServers(values []string) (hosts []string, plain bool, err error) {
	schemes := map[string]bool{}
	for _, v := range values {
		for _, a := range strings.Split(v, ",") {
			a = strings.TrimSpace(a)
			if a == "" {
				continue
			}
			if !strings.Contains(a, "://") {
				a = "https://" + a
			}
			u, perr := url.Parse(a)
			if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Port() == "" || u.Hostname() == "" ||
				(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
				return nil, false, fmt.Errorf("--server %q: give host:port (the API's port), https://host:port, or http://host:port for a dev server", a)
			}
			schemes[u.Scheme] = true
			hosts = append(hosts, u.Host)
		}
	}
	if len(hosts) == 0 {
		return nil, false, errors.New("--server is empty: give the servers' host:port (or set WRIT_SERVER)")
	}
	if len(schemes) > 1 {
		return nil, false, errors.New("--server mixes http:// and TLS servers: a cluster is all one or the other")
	}
	return hosts, schemes["http"], nil
}
