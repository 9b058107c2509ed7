package raftnode

import (
	"context"
	"fmt"
	"testing"

	"github.com/writhq/writ/controlplane/internal/fsm"
)

// TestProposeTogether: commands proposed together go in one entry even when
// nothing else is in flight, in the order given, each answered with its own
// result; a lone command still goes as an entry of its own; and a group
// entry does not take more than MaxCommands commands because proposals carry
// several.
func TestProposeTogether(t *testing.T) {
	h := newHeldLog(t)
	g := newGrouper(h, GroupConfig{MaxCommands: 3, MaxBytes: 1 << 20, InFlight: 1})
	defer g.close()
	n := &Node{group: g}
	type answer struct {
		res []fsm.Result
		err error
	}
	together := func(ids ...int) <-chan answer {
		cmds := make([]Command, len(ids))
		for i, id := range ids {
			cmds[i] = Command{Type: fsm.MsgAdmit, Cmd: admitCmd(id)}
		}
		out := make(chan answer, 1)
		go func() {
			res, _, err := n.ProposeTogether(context.Background(), cmds...)
			out <- answer{res, err}
		}()
		return out
	}
	first := together(0, 1, 0) // nothing in flight: one entry of three
	h.waitProposed(1)
	second := together(2, 3) // these two, then the next pair, would make four
	waitSent(g, 2)
	third := together(4, 5)
	waitSent(g, 3)
	for k := 1; k <= 3; k++ {
		h.release <- nil
		h.waitProposed(min(k+1, 3))
	}
	for i, c := range []struct {
		ch   <-chan answer
		want string
	}{{first, "[int-0 int-1 int-0]"}, {second, "[int-2 int-3]"}, {third, "[int-4 int-5]"}} {
		a := <-c.ch
		var ids []string
		for _, r := range a.res {
			ids = append(ids, r.IntentID)
		}
		if a.err != nil || fmt.Sprint(ids) != c.want {
			t.Errorf("proposal %d: got %v %v, want %s", i, ids, a.err, c.want)
		}
		if i == 0 && (len(a.res) != 3 || !a.res[2].Duplicate) {
			t.Errorf("the repeated admission in the first proposal is not answered as a duplicate: %+v", a.res)
		}
	}
	var sizes []int
	for _, e := range h.proposed() {
		sizes = append(sizes, groupLen(e))
	}
	if fmt.Sprint(sizes) != "[3 2 2]" {
		t.Errorf("got entries of %v commands, want [3 2 2]", sizes)
	}
	if _, _, err := n.ProposeTogether(context.Background(), make([]Command, 4)...); err == nil {
		t.Error("more commands than one entry may carry were taken")
	}
	if _, _, err := n.ProposeTogether(context.Background()); err == nil {
		t.Error("no commands were taken")
	}
}
