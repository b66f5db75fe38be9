package mcpfront

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
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

// Drain stops taking tool calls and ends the calls in flight with a message
// that says to call again with the same arguments, then waits until their
// handlers have returned or ctx ends. Call it on shutdown before closing
// the transports and, last, the Temporal client.
func (f *Front) Drain(ctx context.Context) {
	f.drain.mu.Lock()
	f.drain.draining = true
	f.drain.mu.Unlock()
	f.drain.end()
	done := make(chan struct{})
	go func() { f.drain.inFlight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// drainable wraps a tool handler: refused while draining, and ended with
// drainedMessage when a drain interrupts it. A call that completed keeps
// its result.
func (f *Front) drainable(h server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !f.drain.enter() {
			return mcp.NewToolResultError(refusedMessage), nil
		}
		defer f.drain.inFlight.Done()
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(f.drain.stop, func() { cancel(errDraining) })
		res, err := h(ctx, req)
		if !stop() && (err != nil || res == nil || res.IsError) {
			// The drain cut the call short: whatever it ended with is
			// about the shutdown, not the wait.
			return mcp.NewToolResultError(drainedMessage), nil
		}
		return res, err
	}
}

// drained runs one of durawait's own requests (the task methods) as
// drainable runs a tool call: refused while draining, ended by a drain
// with the same advice, and a panic in it is an error, not a crash.
func (f *Front) drained(ctx context.Context, run func(context.Context) error) (err error) {
	if !f.drain.enter() {
		return errors.New(refusedMessage)
	}
	defer f.drain.inFlight.Done()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(f.drain.stop, func() { cancel(errDraining) })
	defer stop()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	if err = run(ctx); err != nil && draining(ctx) {
		return errors.New(drainedMessage)
	}
	return err
}
