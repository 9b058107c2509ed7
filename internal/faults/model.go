package faults

import (
	"sort"

	"github.com/anishathalye/porcupine"
)

// IdempotencyModel is porcupine's model of the idempotency registry: one
// register per key, holding the intent id the key is bound to. A submission
// binds an unbound key to its own id and answers it; on a bound key it
// answers the bound id. An attempt rejected before any decision (such as
// no_eligible_node) is recorded under its own id but binds nothing
// (docs/controlplane.md, Idempotency): its answer names itself, and the
// register stays as it was. A submission whose answer never came may or may
// not have happened. A read answers the binding ids the cluster holds for
// the key, comma-separated: the bound one, "" for none, and a list when more
// than one intent holds the key (which no state allows).
var IdempotencyModel = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(Op).Key
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() []any { return []any{""} },
	Step: func(state, input, output any) []any {
		st, in, out := state.(string), input.(Op), output.(Op)
		switch {
		case in.Read:
			if out.Answered == st {
				return []any{st}
			}
			return nil
		case out.Unknown && st == "":
			return []any{"", in.ID}
		case out.Unknown:
			return []any{st}
		case out.Unbound && out.Answered == in.ID:
			return []any{st}
		case st == "" && out.Answered == in.ID:
			return []any{in.ID}
		case st != "" && out.Answered == st:
			return []any{st}
		}
		return nil
	},
	Equal: func(a, b any) bool { return a == b },
}

// Operation is one entry of the history.
func Operation(client int, in, out Op, call, ret int64) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}
