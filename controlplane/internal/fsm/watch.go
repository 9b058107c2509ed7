package fsm

import "sync"

// watchers lets requests wait for an intent to change (?wait=) without polling:
// Watch hands out a channel that the next change of that intent closes.
type watchers struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func (w *watchers) watch(id string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]chan struct{}{}
	}
	ch := w.m[id]
	if ch == nil {
		ch = make(chan struct{})
		w.m[id] = ch
	}
	return ch
}

func (w *watchers) notify(id string) {
	w.mu.Lock()
	ch := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// notifyAll wakes every watcher, after a restore replaced the state.
func (w *watchers) notifyAll() {
	w.mu.Lock()
	m := w.m
	w.m = nil
	w.mu.Unlock()
	for _, ch := range m {
		close(ch)
	}
}
