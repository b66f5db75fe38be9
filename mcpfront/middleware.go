package mcpfront

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/durawait/durawait/mcpwire"
)

// middleware wraps a tool's handler in what every call gets, innermost
// first: the drain, the call events and wait log lines, the span and the
// wait metrics, and, last, the wait for its notifications to be written.
func (f *Front) middleware(s *toolSpec, h server.ToolHandlerFunc) server.ToolHandlerFunc {
	return notificationsWritten(f.observed(s, f.callEvents(s, f.drainable(h))))
}

// notificationFlushWait bounds how long a call's answer waits for the
// notifications it sent to be written on its stream (mcpwire's
// AwaitNotificationsWritten): a live stream writes them in microseconds.
const notificationFlushWait = time.Second

// notificationsWritten wraps a tool handler: its answer goes once the
// notifications it sent are written, so its last one (a blocker it ended
// on) is not dropped by the transport.
func notificationsWritten(h server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := h(ctx, req)
		mcpwire.AwaitNotificationsWritten(ctx, notificationFlushWait)
		return res, err
	}
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
