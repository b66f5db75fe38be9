package mcpfront

import (
	"context"
	"sync"
)

// turns hands out the start slots of a front: at most a fixed number in
// flight, and while callers wait, principal by principal in turn (round
// robin), each principal's own calls first come, first served. One
// principal's burst of thousands of calls therefore delays another's call
// by a turn, not by the whole burst.
type turns struct {
	mu   sync.Mutex
	free int
	// waiting holds each principal's queued calls, oldest first; next is
	// the principals with calls queued, in the order their turns come.
	waiting map[string][]chan struct{}
	next    []string
}

func newTurns(slots int) *turns {
	return &turns{free: slots, waiting: map[string][]chan struct{}{}}
}

// acquire waits for a slot for a call of principal who; it fails only when
// ctx ends first. A slot acquired is given back with release.
func (t *turns) acquire(ctx context.Context, who string) error {
	t.mu.Lock()
	if t.free > 0 && len(t.next) == 0 {
		t.free--
		t.mu.Unlock()
		return nil
	}
	granted := make(chan struct{})
	if len(t.waiting[who]) == 0 {
		t.next = append(t.next, who)
	}
	t.waiting[who] = append(t.waiting[who], granted)
	t.mu.Unlock()

	select {
	case <-granted:
		return nil
	case <-ctx.Done():
	}
	t.mu.Lock()
	if t.withdraw(who, granted) {
		t.mu.Unlock()
		return ctx.Err()
	}
	t.mu.Unlock()
	// The slot was granted as the caller left: hand it on.
	t.release()
	return ctx.Err()
}

// withdraw takes a queued call out of its principal's queue; false when it
// is no longer queued (its slot was granted). t.mu is held.
func (t *turns) withdraw(who string, granted chan struct{}) bool {
	q := t.waiting[who]
	for i, c := range q {
		if c != granted {
			continue
		}
		q = append(q[:i:i], q[i+1:]...)
		if len(q) > 0 {
			t.waiting[who] = q
			return true
		}
		delete(t.waiting, who)
		for j, p := range t.next {
			if p == who {
				t.next = append(t.next[:j:j], t.next[j+1:]...)
				break
			}
		}
		return true
	}
	return false
}

// release gives a slot back: to the oldest call of the principal whose turn
// it is, or to the free slots when no call waits.
func (t *turns) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.next) == 0 {
		t.free++
		return
	}
	who := t.next[0]
	t.next = t.next[1:]
	q := t.waiting[who]
	granted := q[0]
	if q = q[1:]; len(q) > 0 {
		t.waiting[who] = q
		t.next = append(t.next, who) // its next call waits for its next turn
	} else {
		delete(t.waiting, who)
	}
	close(granted)
}
