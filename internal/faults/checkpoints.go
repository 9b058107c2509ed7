package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/writhq/writ/ledger"
)

// checkLedgers requires every running server's latest checkpoint to verify
// with one key, equal roots at equal sizes, and each smaller one to be
// consistent with each larger one.
func (k *Checker) checkLedgers(ctx context.Context, r *Report) error {
	type cp struct {
		i int
		c ledger.Checkpoint
	}
	var cps []cp
	vkey := ""
	for i, s := range k.c.Servers {
		if !s.Running() {
			continue
		}
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		got, err := k.c.Client(i).Checkpoint(c)
		cancel()
		if err != nil {
			return fmt.Errorf("faults: %s checkpoint: %w", s.Name, err)
		}
		v, err := ledger.NewVerifier(got.VerifierKey)
		if err != nil {
			return err
		}
		parsed, err := ledger.OpenCheckpoint([]byte(got.Checkpoint), v)
		if err != nil {
			r.problem("%s's checkpoint does not verify: %v", s.Name, err)
			continue
		}
		if vkey == "" {
			vkey = got.VerifierKey
		} else if got.VerifierKey != vkey {
			r.problem("%s signs checkpoints with %s, another server with %s", s.Name, got.VerifierKey, vkey)
		}
		cps = append(cps, cp{i, parsed})
	}
	for _, a := range cps {
		for _, b := range cps {
			switch {
			case a.c.Size == b.c.Size && a.c.Root != b.c.Root:
				r.problem("%s and %s: different roots at size %d", ServerNames[a.i], ServerNames[b.i], a.c.Size)
			case a.c.Size < b.c.Size:
				c, cancel := context.WithTimeout(ctx, 10*time.Second)
				hashes, err := k.c.Client(b.i).Consistency(c, a.c.Size, b.c.Size)
				cancel()
				if err != nil {
					return err
				}
				proof, err := ledger.ParseProof(hashes)
				if err != nil {
					return err
				}
				if err := ledger.CheckConsistency(a.c, b.c, proof); err != nil {
					r.problem("%s's checkpoint (size %d) is not consistent with %s's (size %d): %v", ServerNames[a.i], a.c.Size, ServerNames[b.i], b.c.Size, err)
				}
			}
		}
	}
	return nil
}
