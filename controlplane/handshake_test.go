package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/writhq/writ/internal/eventually"
)

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// TestHandshakeListener: requests are served over connections whose
// handshake the listener did; with every place taken, a new connection is
// closed before its handshake and counted; a freed place takes the next.
func TestHandshakeListener(t *testing.T) {
	cert, pool := selfSigned(t)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var shed atomic.Int64
	ln := listenHandshakes(raw, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, func() { shed.Add(1) }, 1, 2)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || !r.TLS.HandshakeComplete {
			http.Error(w, "no TLS", 500)
			return
		}
		io.WriteString(w, "ok")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	clientCfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: clientCfg}}
	get := func() (string, error) {
		resp, err := hc.Get("https://" + raw.Addr().String() + "/")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), nil
	}
	if got, err := get(); err != nil || got != "ok" {
		t.Fatalf("a request: %q %v", got, err)
	}
	hc.CloseIdleConnections()

	// Two connections that never say hello hold both places.
	var idle []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(ln.places) < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	// A listener that made a connection past the bound wait for a place
	// would close it that much later; the median of 5, not one, is held to
	// 2 s, so that a pause of the loaded machine (CI runs every package at
	// once under -race) during one dial does not count.
	const dials = 5
	var took []time.Duration
	for range dials {
		start := time.Now()
		c, err := tls.Dial("tcp", raw.Addr().String(), clientCfg)
		took = append(took, time.Since(start))
		if err == nil {
			c.Close()
			t.Fatal("a handshake succeeded with every place taken")
		}
	}
	slices.Sort(took)
	if median := took[dials/2]; median > 2*time.Second {
		t.Errorf("the connections past the bound were closed after %s (the median of %d); they must be at once", median, dials)
	}
	if shed.Load() != dials {
		t.Fatalf("shed %d connections, want %d", shed.Load(), dials)
	}
	for _, c := range idle {
		c.Close()
	}
	eventually.NoError(t, "an answer once the places freed", func() error {
		if got, err := get(); err != nil || got != "ok" {
			return fmt.Errorf("%q %v", got, err)
		}
		return nil
	})
}
