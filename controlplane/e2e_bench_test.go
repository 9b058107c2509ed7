package controlplane_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/controlplane/internal/pki"
	"github.com/writhq/writ/protocol"
)

// BenchmarkEndToEnd measures, on loopback, the latency from submitting an
// echo intent to its result being recorded (POST /v1/intents?wait=, through
// admission, Raft, scheduling, a signed dispatch pushed over QUIC, the node's
// verification, its signed result, and the result's Raft entry and receipt),
// beside a raw QUIC round trip of a frame of the same size in the same run.
// The node answers at once, so the figure excludes the sandbox's own start
// (measured by `writ bench sandbox`). Reported: p50 and p99 of each, in µs.
func BenchmarkEndToEnd(b *testing.B) {
	params := `{"msg":"` + strings.Repeat("x", 500) + `"}`
	rtt := quicRoundTrips(b, 500, len(params)+400)
	d := startDevWith(b, func(c *controlplane.Config) { c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil)) })
	d.c.NoProofWait = true // the recorded result, not the next checkpoint
	ctx := context.Background()
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		raw := d.intent(b, "echo", params)
		start := time.Now()
		r, err := d.c.Submit(ctx, raw, nil, 10*time.Second)
		lat = append(lat, time.Since(start))
		if err != nil || r.State != "completed" {
			b.Fatalf("intent %d: %+v %v", i, r, err)
		}
	}
	b.StopTimer()
	report(b, "rtt", rtt)
	report(b, "e2e", lat)
}

func report(b *testing.B, name string, d []time.Duration) {
	slices.Sort(d)
	p := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))].Microseconds()) }
	b.ReportMetric(p(0.50), name+"-p50-µs")
	b.ReportMetric(p(0.99), name+"-p99-µs")
}

// quicRoundTrips measures n round trips of a size-byte frame over one QUIC
// stream with mutual TLS on loopback: the floor any dispatch pays.
func quicRoundTrips(b *testing.B, n, size int) []time.Duration {
	b.Helper()
	ca, _, err := pki.NewCA("bench", time.Now(), time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	leaf := func(role string) tls.Certificate {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, err := ca.Sign(role, "b", key.Public(), []string{"127.0.0.1"}, role == pki.RoleNode, time.Now(), time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	ln, err := quic.ListenAddr("127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{leaf(pki.RoleServer)},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, NextProtos: []string{protocol.ALPN}, MinVersion: tls.VersionTLS13}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept(context.Background())
		if err != nil {
			return
		}
		s, err := conn.AcceptStream(context.Background())
		if err != nil {
			return
		}
		for {
			f, err := protocol.ReadFrame(s)
			if err != nil {
				return
			}
			protocol.WriteFrame(s, f.Type, f.Body)
		}
	}()
	conn, err := quic.DialAddr(context.Background(), ln.Addr().String(), &tls.Config{Certificates: []tls.Certificate{leaf(pki.RoleNode)},
		RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{protocol.ALPN}, MinVersion: tls.VersionTLS13}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.CloseWithError(0, "")
	s, err := conn.OpenStreamSync(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	body := protocol.Heartbeat{InFlight: 1}
	pad := map[string]any{"pad": strings.Repeat("x", size), "hb": body}
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := protocol.WriteFrame(s, "echo", pad); err != nil {
			b.Fatal(err)
		}
		if _, err := protocol.ReadFrame(s); err != nil {
			b.Fatal(fmt.Errorf("round trip %d: %w", i, err))
		}
		out = append(out, time.Since(start))
	}
	return out
}
