package mcpfront

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// queued starts a call of who waiting for a slot and returns a channel
// that yields once it has one; it waits until the call is queued.
func queued(t *testing.T, tr *turns, ctx context.Context, who string) <-chan error {
	t.Helper()
	before := tr.queuedCalls()
	got := make(chan error, 1)
	go func() { got <- tr.acquire(ctx, who) }()
	require.Eventually(t, func() bool { return tr.queuedCalls() == before+1 }, 10*time.Second, time.Millisecond)
	return got
}

func (t *turns) queuedCalls() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, q := range t.waiting {
		n += len(q)
	}
	return n
}

// One principal's burst delays another principal's call by one turn, not
// by the whole burst; each principal's calls keep their order.
func TestTurnsGoRoundThePrincipals(t *testing.T) {
	tr := newTurns(1)
	require.NoError(t, tr.acquire(t.Context(), "alice")) // the slot is busy
	var order []string
	var waits []<-chan error
	whos := []string{"alice-1", "alice-2", "alice-3", "alice-4", "bob-1", "alice-5", "bob-2"}
	for _, w := range whos {
		waits = append(waits, queued(t, tr, t.Context(), w[:len(w)-2]))
	}
	pending := map[int]bool{}
	for i := range waits {
		pending[i] = true
	}
	for len(pending) > 0 {
		tr.release()
		granted := -1
		require.Eventually(t, func() bool {
			for i := range pending {
				select {
				case err := <-waits[i]:
					require.NoError(t, err)
					granted = i
					return true
				default:
				}
			}
			return false
		}, 10*time.Second, time.Millisecond)
		delete(pending, granted)
		order = append(order, whos[granted])
	}
	assert.Equal(t, []string{"alice-1", "bob-1", "alice-2", "bob-2", "alice-3", "alice-4", "alice-5"}, order)
	tr.release()
	assert.Equal(t, 1, tr.free, "every slot given back")
}

// A caller that leaves the queue takes nothing with it; a slot granted as
// it left is handed on, not lost.
func TestTurnsACallerThatLeavesLosesNoSlot(t *testing.T) {
	tr := newTurns(1)
	require.NoError(t, tr.acquire(t.Context(), "a"))
	ctx, cancel := context.WithCancel(t.Context())
	leaving := queued(t, tr, ctx, "b")
	staying := queued(t, tr, t.Context(), "c")
	cancel()
	require.ErrorIs(t, <-leaving, context.Canceled)
	tr.release()
	require.NoError(t, <-staying)
	tr.release()
	assert.Equal(t, 1, tr.free)
	assert.Zero(t, tr.queuedCalls())
	assert.Empty(t, tr.next)
}
