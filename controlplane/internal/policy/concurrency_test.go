package policy

import (
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentUse: one Set and one request serve many goroutines at once
// and give every one of them the same decision (run with -race).
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	s := mustParse(t, DevPolicy)
	in := intent(`{"a":[1,2,{"b":"c"}]}`, tenant("dev"), onTool("echo_approval"))
	req, err := NewInvokeRequest(in, Tool{Name: "echo_approval"})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint(s.Invoke(req))
	var wg sync.WaitGroup
	got := make([]string, 16)
	for i := range got {
		wg.Go(func() {
			for range 50 {
				got[i] = fmt.Sprint(s.Invoke(req))
			}
		})
	}
	wg.Wait()
	for i, g := range got {
		if g != want {
			t.Errorf("goroutine %d: got %s, want %s", i, g, want)
		}
	}
}

func TestNilSetDenies(t *testing.T) {
	t.Parallel()
	var s *Set
	in := intent(`{}`)
	check(t, s.Invoke(mustInvoke(t, in)), want{errors: true})
	req, err := NewApproveRequest(in, approval(in, "alice", "approve"), echoTool())
	if err != nil {
		t.Fatal(err)
	}
	check(t, s.Approve(req), want{errors: true})
}
