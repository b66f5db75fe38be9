package mcpfront

import (
	"context"
	"errors"
	"sync"
)

// Messages of calls that a shutting-down durawait ends or refuses. A wait
// runs on in Temporal, so calling again with the same arguments attaches
// to it once durawait (or another front end) is back.
const (
	drainedMessage = "durawait is shutting down, so this call ends here; a wait it started goes on. " +
		"Call again with the same arguments (once durawait is back) to pick up the same wait."
	refusedMessage = "durawait is shutting down and takes no new calls. " +
		"Call again with the same arguments in a moment: a wait already started goes on and the call attaches to it."
)

// errDraining is the cause of a call's context that a shutdown ended: the
// caller did not hang up, so nothing the call holds is let go.
var errDraining = errors.New("durawait is shutting down")

// draining reports whether ctx ended because durawait is shutting down.
func draining(ctx context.Context) bool { return errors.Is(context.Cause(ctx), errDraining) }

// drain tracks the tool calls in flight so that a shutdown can end them
// with an answer rather than a broken connection.
type drain struct {
	mu       sync.Mutex
	draining bool
	stop     context.Context
	end      context.CancelFunc
	inFlight sync.WaitGroup
}

func newDrain() *drain {
	d := &drain{}
	d.stop, d.end = context.WithCancel(context.Background())
	return d
}

// enter counts a call in, or reports that durawait is draining.
func (d *drain) enter() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		return false
	}
	d.inFlight.Add(1)
	return true
}
