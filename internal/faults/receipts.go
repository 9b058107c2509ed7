package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/protocol"
)

// checkReceipts reads, with the admin token, every receipt the leader's
// ledger recorded since the last scenario, and requires exactly one final
// receipt for each admitted intent — the one its answer names — or that
// one (unknown) and one superseding it with the result that came late; no
// receipt for an intent that was not admitted, and none for an intent the
// suite never submitted.
func (k *Checker) checkReceipts(ctx context.Context, leader int, l *Load, admitted map[string]string, answers map[string]*client.IntentResponse, r *Report) error {
	var need uint64
	for _, a := range answers {
		if a.ReceiptIndex != nil {
			need = max(need, *a.ReceiptIndex+1)
		}
	}
	cl := k.c.Client(leader)
	defer cl.CloseIdleConnections()
	var size int64
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		cp, err := cl.Checkpoint(c)
		cancel()
		if err == nil && uint64(cp.Size) >= need {
			size = cp.Size
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("faults: no checkpoint covers %d receipts (%v)", need, err)
		}
	}
	receipts := make([]protocol.Receipt, size-k.read)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed error
	for w := range int64(4) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k.read + w; i < size; i += 4 {
				c, cancel := context.WithTimeout(ctx, 10*time.Second)
				raw, err := cl.Receipt(c, uint64(i))
				cancel()
				var rp struct {
					Receipt protocol.Receipt `json:"receipt"`
				}
				if err == nil {
					err = json.Unmarshal(raw, &rp)
				}
				if err == nil && rp.Receipt.Index != uint64(i) {
					err = fmt.Errorf("the receipt says index %d", rp.Receipt.Index)
				}
				if err != nil {
					mu.Lock()
					failed = fmt.Errorf("faults: receipt %d: %w", i, err)
					mu.Unlock()
					return
				}
				receipts[i-k.read] = rp.Receipt
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		return failed
	}
	k.read = size
	r.LedgerSize = size
	by := map[string][]protocol.Receipt{}
	for _, rc := range receipts {
		if rc.Type != protocol.ReceiptType {
			continue // an admin entry (the suite's setup, a lock): not an attempt
		}
		r.Receipts++
		by[rc.IntentID] = append(by[rc.IntentID], rc)
	}
	mine := map[string]bool{}
	for _, ids := range l.ids {
		for _, id := range ids {
			mine[id] = true
		}
	}
	for id, rs := range by {
		switch {
		case mine[id] && admitted[id] == "":
			r.Extra++
			r.problem("intent %s was not recorded, yet has %d receipts (%s)", id, len(rs), rs[0].Outcome)
		case !mine[id] && !k.seen[id]:
			r.Extra++
			r.problem("receipt %d names intent %s, which the suite never submitted", rs[0].Index, id)
		case !mine[id]:
			// A result of an earlier scenario's intent that came late, or the
			// first final receipt of one that was stuck (reported then).
			for _, rc := range rs {
				if rc.Supersedes == nil && k.receipted[id] {
					r.Extra++
					r.problem("intent %s of an earlier scenario has another final receipt %d", id, rc.Index)
				}
				k.receipted[id] = true
			}
		}
	}
	for id := range admitted {
		k.seen[id] = true
		a, rs := answers[id], by[id]
		if len(rs) > 0 {
			k.receipted[id] = true
		}
		if a == nil {
			continue // stuck
		}
		switch {
		case len(rs) == 0:
			r.Lost++
			r.problem("intent %s (%s) has no receipt", id, a.State)
		case a.ReceiptIndex == nil || rs[0].Index != *a.ReceiptIndex:
			r.problem("intent %s: its answer names receipt %v, the ledger holds %d", id, a.ReceiptIndex, rs[0].Index)
		case rs[0].Outcome != a.State && a.SupersededBy == nil:
			r.problem("intent %s ended %s, its receipt says %s", id, a.State, rs[0].Outcome)
		case len(rs) == 2 && (rs[0].Outcome != "unknown" || rs[1].Supersedes == nil || *rs[1].Supersedes != rs[0].Index):
			r.Extra++
			r.problem("intent %s has two receipts, %d (%s) and %d (%s), the second not superseding an unknown outcome", id, rs[0].Index, rs[0].Outcome, rs[1].Index, rs[1].Outcome)
		case len(rs) > 2:
			r.Extra++
			r.problem("intent %s has %d receipts", id, len(rs))
		}
	}
	return nil
}
