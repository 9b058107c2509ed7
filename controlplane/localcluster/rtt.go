package localcluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/writhq/writ/controlplane/internal/pki"
	"github.com/writhq/writ/protocol"
)

// QUICRoundTrips measures n round trips of a session frame of about size
// bytes over one QUIC stream with mutual TLS 1.3 on loopback, in this
// process: a throwaway CA, a server and a node certificate, the session's
// ALPN and frame encoding. It is the floor under any dispatch, the baseline
// the end-to-end benchmarks print their latency beside.
func QUICRoundTrips(ctx context.Context, n, size int) ([]time.Duration, error) {
	ca, _, err := pki.NewCA("writ rtt baseline", time.Now(), time.Hour)
	if err != nil {
		return nil, err
	}
	leaf := func(role string) (tls.Certificate, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return tls.Certificate{}, err
		}
		der, err := ca.Sign(role, "rtt", key.Public(), []string{"127.0.0.1"}, role == pki.RoleNode, time.Now(), time.Hour)
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, err
	}
	serverCert, err := leaf(pki.RoleServer)
	if err != nil {
		return nil, err
	}
	nodeCert, err := leaf(pki.RoleNode)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	ln, err := quic.ListenAddr("127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{serverCert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, NextProtos: []string{protocol.ALPN}, MinVersion: tls.VersionTLS13}, nil)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		s, err := conn.AcceptStream(ctx)
		if err != nil {
			return
		}
		for {
			f, err := protocol.ReadFrame(s)
			if err != nil {
				return
			}
			if protocol.WriteFrame(s, f.Type, f.Body) != nil {
				return
			}
		}
	}()
	conn, err := quic.DialAddr(ctx, ln.Addr().String(), &tls.Config{Certificates: []tls.Certificate{nodeCert},
		RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{protocol.ALPN}, MinVersion: tls.VersionTLS13}, nil)
	if err != nil {
		return nil, err
	}
	defer conn.CloseWithError(0, "")
	s, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	body := map[string]string{"pad": strings.Repeat("x", max(size-40, 0))}
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := protocol.WriteFrame(s, protocol.FrameHeartbeat, body); err != nil {
			return nil, err
		}
		if _, err := protocol.ReadFrame(s); err != nil {
			return nil, fmt.Errorf("localcluster: round trip %d: %w", i, err)
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}
