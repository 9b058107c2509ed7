package nodeagent

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/writhq/writ/protocol"
)

// readLoop takes the server's frames until the session ends. Dispatches run
// under runCtx, the agent's own life: a run goes on when its session ends,
// and its result waits in the outbox for the next one.
func (a *Agent) readLoop(runCtx context.Context, c *conn) error {
	for {
		f, err := protocol.ReadFrame(c.stream)
		if err != nil {
			return closeReason(c, err)
		}
		switch f.Type {
		case protocol.FrameDispatch:
			var df protocol.DispatchFrame
			if err := f.DecodeBody(&df); err != nil {
				return err
			}
			go func(raw []byte) {
				err := a.run.Handle(runCtx, raw, &a.keys)
				switch {
				case errors.Is(err, ErrUndecodable), errors.Is(err, ErrUnverified):
					c.log.Warn("dispatch unreadable or unverified; reported", "err", err)
					c.write(protocol.FrameReject, protocol.Reject{Error: protocol.ErrorBody{Code: protocol.CodeOf(err), Message: err.Error()}})
				case err != nil:
					// Not recorded: a re-push after reconnecting is handled afresh.
					c.log.Error("dispatch not handled", "err", err)
				}
			}(df.Dispatch)
		case protocol.FrameCancel:
			var cf protocol.CancelDispatch
			if err := f.DecodeBody(&cf); err != nil {
				return err
			}
			c.log.Info("server canceled a dispatch", "dispatch", cf.DispatchID)
			a.run.Cancel(cf.DispatchID)
		case protocol.FrameAck:
			var ack protocol.Ack
			if err := f.DecodeBody(&ack); err != nil {
				return err
			}
			if ack.Error != nil {
				c.log.Warn("server will not record a result; dropping it", "dispatch", ack.DispatchID, "code", ack.Error.Code, "message", ack.Error.Message)
			}
			if err := a.box.Ack(ack.DispatchID); err != nil {
				c.log.Error("outbox ack failed", "dispatch", ack.DispatchID, "err", err)
			}
		case protocol.FrameCertificate:
			var cert protocol.Certificate
			if err := f.DecodeBody(&cert); err != nil {
				return err
			}
			if err := a.installCert(cert.Chain); err != nil {
				c.log.Error("renewed certificate not installed", "err", err)
			}
		case protocol.FrameBye:
			return byeError(f)
		default:
			return fmt.Errorf("unexpected frame %q", f.Type)
		}
	}
}

// keepAlive reports liveness and load, sends unacknowledged results again
// now and then, and renews the client certificate at two thirds of its life.
func (a *Agent) keepAlive(ctx context.Context, c *conn) {
	t := time.NewTicker(a.heartbeat())
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.write(protocol.FrameHeartbeat, protocol.Heartbeat{InFlight: a.run.InFlight()}) != nil {
			return
		}
		if n%3 == 0 {
			a.flush(c)
		}
		a.maybeRenew(c)
	}
}

func (a *Agent) maybeRenew(c *conn) {
	from, until := a.identity().CertExpiry()
	if time.Now().Before(from.Add(until.Sub(from) * 2 / 3)) {
		return
	}
	a.idmu.Lock()
	if a.pending != nil && time.Since(a.pendingAt) < time.Minute {
		a.idmu.Unlock()
		return // asked recently; wait for the answer
	}
	key, csr, err := newTLSKey(a.id.Node)
	if err != nil {
		a.idmu.Unlock()
		return
	}
	a.pending, a.pendingAt = key, time.Now()
	a.idmu.Unlock()
	c.log.Info("renewing the client certificate", "expires", until)
	c.write(protocol.FrameRenew, protocol.Renew{CSR: csr})
}

// installCert saves a renewed certificate for the pending key; the next
// session uses it.
func (a *Agent) installCert(chain [][]byte) error {
	a.idmu.Lock()
	defer a.idmu.Unlock()
	if a.pending == nil || len(chain) == 0 {
		return errors.New("no renewal was asked for")
	}
	leaf, err := x509.ParseCertificate(chain[0])
	if err != nil {
		return err
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: a.id.Pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return err
	}
	if pub, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(a.pending.Public()) {
		return errors.New("the certificate is not for the key that asked")
	}
	pair, err := saveCert(a.opts.DataDir, a.pending, chain)
	if err != nil {
		return err
	}
	id := *a.id
	id.TLS = pair
	a.id, a.pending = &id, nil
	a.log.Info("client certificate renewed", "expires", leaf.NotAfter)
	return nil
}

// closeReason turns the end of a session into an error, and a server's
// refusal of a revoked node into ErrRevoked.
func closeReason(c *conn, err error) error {
	var app *quic.ApplicationError
	if errors.As(err, &app) && app.ErrorCode == 2 {
		return ErrRevoked
	}
	if errors.Is(err, io.EOF) {
		return errors.New("the server closed the session")
	}
	return err
}
