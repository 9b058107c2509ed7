package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/client"
	"github.com/writhq/writ/ledger"
)

func newLedger(e *env) *cobra.Command {
	var server string
	cmd := &cobra.Command{Use: "ledger", Short: "Export and watch a server's receipt ledger, and list its admin entries"}
	cmd.PersistentFlags().StringVar(&server, "server", defaultServer(), "the control plane's API address")
	cmd.AddCommand(newLedgerExport(e, &server), newLedgerWatch(e, &server), newLedgerAdmin(e, &server))
	return cmd
}

func newLedgerExport(e *env, server *string) *cobra.Command {
	var from, to int64
	var out string
	tokenFlag := readTokenFlag()
	cmd := &cobra.Command{
		Use:   "export --from N --to M [--out FILE] [--token-file FILE]",
		Short: "Write a bundle of receipts N..M-1 with their proofs and checkpoint, for writ verify bundle (an auditor or admin token)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			ctx := context.Background()
			token, err := tokenFlag.get(e)
			if err != nil {
				return err
			}
			if token == "" {
				return errors.New("receipts are read with an auditor or admin token: --token-file FILE or $WRIT_TOKEN (writ token create --role auditor)")
			}
			c, err := e.client(*server, token)
			if err != nil {
				return err
			}
			// Every receipt is proved against the checkpoint the bundle
			// names: when a newer one is published meanwhile (any admission,
			// result or admin change appends), the export starts again from
			// the newest, a few times.
			var b *ledger.Bundle
			for attempt := 1; ; attempt++ {
				var moved bool
				b, moved, err = exportBundle(ctx, c, from, to)
				if err != nil {
					return err
				}
				if !moved {
					break
				}
				if attempt == 5 {
					return fmt.Errorf("the ledger moved on during each of %d exports; run it again", attempt)
				}
			}
			body, err := json.MarshalIndent(b, "", "  ")
			if err != nil {
				return err
			}
			if out == "" {
				_, err = fmt.Fprintf(e.out, "%s\n", body)
				return err
			}
			return writeKeyFile(out, append(body, '\n'), 0o644, true)
		},
	}
	cmd.Flags().Int64Var(&from, "from", 0, "the first receipt index")
	cmd.Flags().Int64Var(&to, "to", 0, "one past the last receipt index (default: the latest checkpoint's size)")
	cmd.Flags().StringVar(&out, "out", "", "write the bundle to this file instead of standard output")
	tokenFlag.register(cmd.Flags())
	return cmd
}

// exportBundle reads receipts from..to-1 (to 0: up to the latest
// checkpoint's size) with their proofs against the latest checkpoint;
// moved reports that a newer checkpoint was published before the last was
// read.
func exportBundle(ctx context.Context, c *client.Client, from, to int64) (b *ledger.Bundle, moved bool, err error) {
	cp, err := c.Checkpoint(ctx)
	if err != nil {
		return nil, false, err
	}
	if to == 0 {
		to = cp.Size
	}
	if from < 0 || from > to || to > cp.Size {
		return nil, false, fmt.Errorf("--from %d --to %d: want 0 ≤ from ≤ to ≤ %d, the latest checkpoint's size", from, to, cp.Size)
	}
	b = &ledger.Bundle{VerifierKey: cp.VerifierKey, Checkpoints: []string{cp.Checkpoint}, Consistency: []ledger.Proof{}}
	for i := from; i < to; i++ {
		raw, err := c.Receipt(ctx, uint64(i))
		if err != nil {
			return nil, false, fmt.Errorf("receipt %d: %w", i, err)
		}
		if hashOnly(raw) {
			return nil, false, fmt.Errorf("receipt %d: the server proves it by its leaf hash only: the token may not read it (an auditor token reads a receipt that carries a tool's output only with --outputs)", i)
		}
		rp, err := ledger.DecodeReceiptProof(raw)
		if err != nil {
			return nil, false, fmt.Errorf("receipt %d: %w", i, err)
		}
		if rp.Checkpoint != cp.Checkpoint {
			return nil, true, nil
		}
		b.Receipts = append(b.Receipts, *rp)
	}
	return b, false, nil
}

// hashOnly reports whether a GET /v1/receipts answer is the public one: the
// leaf's hash and proof, without the receipt.
func hashOnly(raw []byte) bool {
	var a struct {
		Receipt  json.RawMessage `json:"receipt"`
		LeafHash string          `json:"leaf_hash"`
	}
	return json.Unmarshal(raw, &a) == nil && a.Receipt == nil && a.LeafHash != ""
}

func newLedgerWatch(e *env, server *string) *cobra.Command {
	var key string
	var interval time.Duration
	var count int
	cmd := &cobra.Command{
		Use:   "watch --key VERIFIER_KEY [--interval 2s] [--count N]",
		Short: "Follow a server's checkpoints and check each extends the previous one",
		Long: `Follow a server's checkpoints: check each one's signature with the verifier key
and, with a consistency proof, that it extends the previous one. Prints a JSON line
per new checkpoint. Exits 1 on a checkpoint that does not verify, a rollback (the
log shrank) or a split view (the same size with another root, or a proof that
fails) — evidence that the server showed two histories. --count stops after N
checkpoints.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if key == "" {
				return errors.New("--key VERIFIER_KEY is required")
			}
			v, err := ledger.NewVerifier(key)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			c, err := e.client(*server, "")
			if err != nil {
				return err
			}
			var prev []byte
			var prevCP ledger.Checkpoint
			seen := 0
			for {
				cp, err := c.Checkpoint(ctx)
				switch {
				case err == nil:
					note := []byte(cp.Checkpoint)
					cur, err := ledger.OpenCheckpoint(note, v)
					if err != nil {
						return e.watchFailed(err)
					}
					if prev == nil || cur.Size != prevCP.Size || cur.Root != prevCP.Root {
						if prev != nil {
							if cur.Size < prevCP.Size {
								return e.watchFailed(fmt.Errorf("%w: size %d after %d", ledger.ErrRollback, cur.Size, prevCP.Size))
							}
							proof, err := c.Consistency(ctx, prevCP.Size, cur.Size)
							if err != nil {
								return e.watchFailed(fmt.Errorf("consistency proof: %w", err))
							}
							p, err := ledger.ParseProof(proof)
							if err != nil {
								return e.watchFailed(err)
							}
							if _, _, err := ledger.VerifyConsistency(v, prev, note, p); err != nil {
								return e.watchFailed(err)
							}
						}
						prev, prevCP = note, cur
						seen++
						e.printJSON(map[string]any{"origin": cur.Origin, "size": cur.Size, "root": cur.Root, "consistent": true})
						if count > 0 && seen >= count {
							return nil
						}
					}
				case ctx.Err() != nil:
					return nil
				default:
					var ae *client.Error
					if !errors.As(err, &ae) || ae.Code != "not_found" {
						fmt.Fprintf(e.err, "writ ledger watch: %v\n", err)
					}
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(interval):
				}
			}
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "the ledger's note verifier key")
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "how often to fetch the checkpoint")
	cmd.Flags().IntVar(&count, "count", 0, "stop after this many checkpoints (0: never)")
	return cmd
}

func (e *env) watchFailed(err error) error {
	e.printJSON(map[string]any{"consistent": false, "error": ledger.Code(err), "message": err.Error()})
	return exitError{1}
}
