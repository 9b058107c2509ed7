package faults

import (
	"math"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestIdempotencyModel: the checker tells a linearizable idempotency
// history from one where a key was bound twice or an acknowledged
// submission went missing.
func TestIdempotencyModel(t *testing.T) {
	sub := func(id string, call, ret int64, answered string) porcupine.Operation {
		out := Op{Key: "k", ID: id, Answered: answered}
		if ret < 0 {
			out.Unknown, ret = true, math.MaxInt64
		}
		return porcupine.Operation{Input: Op{Key: "k", ID: id}, Call: call, Output: out, Return: ret}
	}
	unbound := func(id string, call, ret int64) porcupine.Operation {
		return porcupine.Operation{Input: Op{Key: "k", ID: id}, Call: call, Output: Op{Key: "k", ID: id, Answered: id, Unbound: true}, Return: ret}
	}
	read := func(at int64, held string) porcupine.Operation {
		return porcupine.Operation{Input: Op{Read: true, Key: "k"}, Call: at, Output: Op{Read: true, Key: "k", Answered: held}, Return: at + 1}
	}
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"first wins", []porcupine.Operation{sub("a", 0, 2, "a"), sub("b", 3, 4, "a"), read(10, "a")}, porcupine.Ok},
		{"unknown then bound", []porcupine.Operation{sub("a", 0, -1, ""), sub("a", 3, 4, "a"), read(10, "a")}, porcupine.Ok},
		{"unknown, never admitted", []porcupine.Operation{sub("a", 0, -1, ""), read(10, "")}, porcupine.Ok},
		{"bound twice", []porcupine.Operation{sub("a", 0, 2, "a"), sub("b", 3, 4, "b"), read(10, "a")}, porcupine.Illegal},
		{"acknowledged, then missing", []porcupine.Operation{sub("a", 0, 2, "a"), read(10, "")}, porcupine.Illegal},
		{"rejected binds nothing", []porcupine.Operation{unbound("a", 0, 2), sub("b", 3, 4, "b"), unbound("a", 5, 6), read(10, "b")}, porcupine.Ok},
		{"rejected, nothing held", []porcupine.Operation{unbound("a", 0, 2), read(10, "")}, porcupine.Ok},
		{"two held", []porcupine.Operation{sub("a", 0, -1, ""), sub("b", 0, -1, ""), read(10, "a,b")}, porcupine.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperationsTimeout(IdempotencyModel.ToModel(), tc.ops, 10*time.Second); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
