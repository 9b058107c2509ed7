package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/writhq/writ/controlplane/internal/varint"
)

// MsgGroup is one log entry that carries several commands, proposed together
// by the leader so that one disk write and one round to the followers commit
// them all (group commit). They are applied in their order, each exactly as if
// it were an entry of its own at the group's index: what one command changes,
// the next sees, so idempotency keys and the last unit of a run budget are
// decided within a group as across entries. Each command's receipts are
// appended after it, sorted within it, as for a single entry. A group's Apply
// response is a []Result, one per command, in order.
const MsgGroup MsgType = 20

// MaxGroup is the most commands one group entry may carry.
const MaxGroup = 4096

// EncodeGroup returns the group entry of cmds, each an entry of its own as
// Encode makes it: the type byte, the count, then each command with its
// length, as unsigned varints.
func EncodeGroup(cmds [][]byte) ([]byte, error) {
	if len(cmds) == 0 || len(cmds) > MaxGroup {
		return nil, fmt.Errorf("fsm: a group holds 1 to %d commands, not %d", MaxGroup, len(cmds))
	}
	n := 1 + binary.MaxVarintLen64
	for _, c := range cmds {
		if len(c) == 0 || MsgType(c[0]) == MsgGroup {
			return nil, errors.New("fsm: a group holds non-empty commands that are not groups")
		}
		n += binary.MaxVarintLen64 + len(c)
	}
	b := make([]byte, 0, n)
	b = append(b, byte(MsgGroup))
	b = binary.AppendUvarint(b, uint64(len(cmds)))
	for _, c := range cmds {
		b = binary.AppendUvarint(b, uint64(len(c)))
		b = append(b, c...)
	}
	return b, nil
}

// errGroup is why a group's body does not decode.
var errGroup = errors.New("fsm: malformed group entry")

// decodeGroup splits a group's body (the entry without its type byte) into
// its commands, which alias data. It accepts exactly what EncodeGroup makes:
// a count from 1 to MaxGroup, non-empty commands that are not groups, and no
// trailing bytes.
func decodeGroup(data []byte) ([][]byte, error) {
	count, k := varint.Uvarint(data)
	if k <= 0 || count == 0 || count > MaxGroup || count > uint64(len(data)) {
		return nil, errGroup
	}
	data = data[k:]
	cmds := make([][]byte, 0, count)
	for range count {
		size, k := varint.Uvarint(data)
		if k <= 0 || size == 0 || size > uint64(len(data)-k) {
			return nil, errGroup
		}
		c := data[k : k+int(size)]
		if MsgType(c[0]) == MsgGroup {
			return nil, errGroup
		}
		cmds = append(cmds, c)
		data = data[k+int(size):]
	}
	if len(data) != 0 {
		return nil, errGroup
	}
	return cmds, nil
}

// applyGroup applies each command of a group entry in order, with its
// receipts, and returns their results.
func (f *FSM) applyGroup(index uint64, data []byte) ([]Result, []string) {
	cmds, err := decodeGroup(data)
	if err != nil {
		panic(fmt.Sprintf("fsm: cannot decode the group at index %d: %v", index, err))
	}
	out := make([]Result, len(cmds))
	var changed []string
	for i, c := range cmds {
		res, ch := f.apply(index, MsgType(c[0]), c[1:])
		f.state.Index = index
		f.recordFinal(ch)
		out[i] = res
		changed = append(changed, ch...)
	}
	return out, changed
}
