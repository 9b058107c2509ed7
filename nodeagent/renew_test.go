package nodeagent

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/x509"
	"log/slog"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/internal/testcontrol"
	"github.com/writhq/writ/protocol"
)

// TestRenewal: past two thirds of its client certificate's life the agent
// asks for a new one with a CSR for a new key, installs the certificate the
// server answers (in memory and on disk), and presents it in its next
// session.
func TestRenewal(t *testing.T) {
	t.Parallel()
	cfg := testcontrol.DefaultConfig()
	// Valid from a minute ago for 20 s: two thirds of its life are over.
	cfg.NodeCertValidity = 20 * time.Second
	fc := testcontrol.Start(t, cfg)
	id, dir := enroll(t, fc)
	oldKey := id.TLS.PrivateKey.(*ecdsa.PrivateKey)
	a := startAgent(t, fc, id, dir, &fakeRunner{}, &fakeBox{})
	s := fc.NextSession(t)

	var r protocol.Renew
	if err := s.Next(t, protocol.FrameRenew).DecodeBody(&r); err != nil {
		t.Fatal(err)
	}
	csr, err := x509.ParseCertificateRequest(r.CSR)
	if err != nil || csr.CheckSignature() != nil {
		t.Fatalf("renew CSR unreadable or unsigned: %v", err)
	}
	if oldKey.PublicKey.Equal(csr.PublicKey) {
		t.Fatal("the renewal reuses the old TLS key")
	}
	eventually.True(t, "the agent to install the renewed certificate", func() bool {
		issued := s.Issued()
		return len(issued) > 0 && bytes.Equal(a.identity().TLS.Certificate[0], issued[0])
	})
	issued := s.Issued()[0]
	onDisk, err := LoadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk.TLS.Certificate[0], issued) {
		t.Fatal("the renewed certificate is not the one on disk")
	}
	if !onDisk.TLS.PrivateKey.(*ecdsa.PrivateKey).PublicKey.Equal(csr.PublicKey) {
		t.Fatal("the key on disk is not the key of the CSR")
	}
	if _, until := a.identity().CertExpiry(); time.Until(until) < 30*time.Minute {
		t.Fatalf("the installed certificate expires %s, want the renewed hour", until)
	}

	s.Close(quic.ApplicationErrorCode(0))
	next := fc.NextSession(t)
	if !bytes.Equal(next.Peer.Raw, issued) {
		t.Fatal("the next session does not present the renewed certificate")
	}
}

// TestInstallCertRefuses: a certificate nobody asked for, one for another
// key than the pending one, one from another CA, and an empty chain are
// not installed, and leave the identity as it was.
func TestInstallCertRefuses(t *testing.T) {
	t.Parallel()
	fc := testcontrol.Start(t, testcontrol.DefaultConfig())
	other := testcontrol.Start(t, testcontrol.DefaultConfig())
	id, dir := enroll(t, fc)
	a, err := New(Options{Servers: []string{fc.Addr()}, DataDir: dir, Logger: slog.New(slog.DiscardHandler)}, id, &fakeRunner{}, &fakeBox{})
	if err != nil {
		t.Fatal(err)
	}
	pending, pendingCSR, err := newTLSKey(id.Node)
	if err != nil {
		t.Fatal(err)
	}
	_, strangerCSR, err := newTLSKey(id.Node)
	if err != nil {
		t.Fatal(err)
	}
	certify := func(c *testcontrol.Control, csr []byte) [][]byte {
		chain, err := c.Certify(id.Node, csr, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return chain
	}
	before := id.TLS.Certificate[0]
	for _, tc := range []struct {
		name    string
		pending bool
		chain   [][]byte
	}{
		{"not asked for", false, certify(fc, pendingCSR)},
		{"another key", true, certify(fc, strangerCSR)},
		{"another CA", true, certify(other, pendingCSR)},
		{"empty chain", true, nil},
		{"not a certificate", true, [][]byte{[]byte("junk")}},
	} {
		a.idmu.Lock()
		a.pending = nil
		if tc.pending {
			a.pending = pending
		}
		a.idmu.Unlock()
		if err := a.installCert(tc.chain); err == nil {
			t.Errorf("%s: installed", tc.name)
		}
		if !bytes.Equal(a.identity().TLS.Certificate[0], before) {
			t.Fatalf("%s: the identity changed", tc.name)
		}
		if onDisk, err := LoadIdentity(dir); err != nil || !bytes.Equal(onDisk.TLS.Certificate[0], before) {
			t.Fatalf("%s: the identity on disk changed (%v)", tc.name, err)
		}
	}
	// The control: the pending key's certificate from the cluster CA is taken.
	a.idmu.Lock()
	a.pending = pending
	a.idmu.Unlock()
	if err := a.installCert(certify(fc, pendingCSR)); err != nil {
		t.Fatalf("the right certificate: %v", err)
	}
	if bytes.Equal(a.identity().TLS.Certificate[0], before) {
		t.Fatal("the right certificate was not installed")
	}
}
