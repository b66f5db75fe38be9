package mcpfront

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

// agentSignalTimeout bounds each signal a wait_agent sends an
// invocation (an ack, a release).
const agentSignalTimeout = 5 * time.Second

// fanInAnswer is one invocation's outcome within a fan-in call.
type fanInAnswer struct {
	index  int
	answer workflows.AgentWaitAnswer
	err    error
}

// handleWaitAgents is wait_agent on several invocations (spec.IDs): one
// releasable wait update per invocation (workflows.AgentWaitRequest.Release).
// A releasable wait takes no blocker: it returns one still undelivered,
// and the call acks each blocker it reports before it answers, so a
// blocker reaches the caller at least once, never zero times. When the
// mode is met, the call answers at once: the invocations that have not
// answered are reported running (wait_elapsed, elapsed since their start)
// without waiting for their workflows, and their waits are released in
// the background. Each invocation's state lives in its own workflow, so
// the call is as durable and as re-attachable as a wait_agent on one.
func (f *Front) handleWaitAgents(ctx context.Context, req mcp.CallToolRequest, spec workflows.WaitAgentSpec) (*mcp.CallToolResult, error) {
	principal := mcpwire.PrincipalFrom(ctx)
	for i, id := range spec.IDs {
		if !workflows.Owns(principal, id) {
			return mcp.NewToolResultError(fanInUnknown(i, id)), nil
		}
	}
	noteAttributes(ctx, attrInvocationIDs.StringSlice(spec.IDs), attrFanInMode.String(string(spec.Mode)))
	started, closed, bad := f.invocationStarts(ctx, spec.IDs)
	if bad != nil {
		return bad, nil
	}
	until := time.Now().Add(f.opts.Agents.WaitWindow)
	release := newReleaseKey("fan-in")
	var attachOnce sync.Once
	attached := func() {
		attachOnce.Do(func() { noteWait(ctx, strings.Join(spec.IDs, ","), waitAttached) })
	}

	waitCtx, stopWaits := context.WithCancel(ctx)
	defer stopWaits()
	answers := make(chan fanInAnswer, len(spec.IDs))
	for i, id := range spec.IDs {
		go func() {
			if closed[i] {
				// It had ended: its result is its answer, no wait needed.
				p, err := f.finalPayload(waitCtx, id)
				answers <- fanInAnswer{index: i, answer: workflows.AgentWaitAnswer{InvocationPayload: p}, err: err}
				return
			}
			a, err := f.awaitInvocation(waitCtx, id, until, release, attached)
			answers <- fanInAnswer{index: i, answer: a, err: err}
		}()
	}
	events, unsubscribe := f.subscribeAll(spec.IDs)
	defer unsubscribe()
	token := progressToken(req)
	step := 0
	report := func(ev invocationEvent) {
		if p, ok := ev.event.(workflows.AgentProgress); ok {
			step++
			f.reportProgress(ctx, token, float64(step), 0, ev.id+": "+p.Message)
		}
	}

	got := make([]workflows.AgentWaitAnswer, len(spec.IDs))
	answered := make([]bool, len(spec.IDs))
	payloads := make([]workflows.InvocationPayload, len(spec.IDs))
	decider, met := -1, false
	// unheard reports whether an invocation that had ended before the
	// call has not answered yet: its result is read, not waited for, so
	// the call has it in a moment even once the mode is met.
	unheard := func() bool {
		for i := range closed {
			if closed[i] && !answered[i] {
				return true
			}
		}
		return false
	}
	// releaseRest releases, in the background, the waits that have not
	// answered (nothing is lost if a release fails: a releasable wait
	// takes nothing, and runs at most to its window).
	releaseRest := func() {
		for i, id := range spec.IDs {
			if !answered[i] {
				go f.signalInvocation(ctx, id, workflows.AgentReleaseWaitSignal, workflows.AgentReleaseWait{Key: release})
			}
		}
	}
	for pending := len(spec.IDs); pending > 0 && (!met || unheard()); {
		select {
		case a := <-answers:
			pending--
			if a.err != nil {
				answered[a.index] = true
				releaseRest()
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return mcp.NewToolResultError(fanInFailure(a.index, spec.IDs[a.index], a.err)), nil
			}
			got[a.index], payloads[a.index], answered[a.index] = a.answer, a.answer.InvocationPayload, true
			if !met {
				if decider, met = workflows.FanInMet(spec.Mode, payloads, answered, a.index); met {
					releaseRest()
				}
			}
		case ev := <-events:
			report(ev)
		}
	}
	if met {
		now := time.Now()
		for i, id := range spec.IDs {
			if !answered[i] {
				payloads[i] = workflows.InvocationPayload{InvocationID: id, Status: workflows.AgentRunning,
					Reason: workflows.AgentReasonWaitElapsed, ElapsedMs: now.Sub(started[i]).Milliseconds()}
			}
		}
	}
	// What the runs reported before their waits returned goes out too.
	drainPending(events, report)
	f.ackBlockers(ctx, spec.IDs, got)

	out := workflows.FanInPayload{Mode: spec.Mode, Satisfied: met, Invocations: make([]workflows.InvocationPayload, len(spec.IDs))}
	for i, p := range payloads {
		f.tellBlocker(ctx, spec.IDs[i], p)
		out.Invocations[i] = f.namedCanceller(ctx, p)
	}
	if !met {
		// The window ended first: the first that still runs says so.
		decider = 0
		for i, p := range out.Invocations {
			if !p.Answered() {
				decider = i
				break
			}
		}
	}
	out.InvocationPayload = out.Invocations[decider]
	return structuredResult(out), nil
}

// invocationStarts reads when each invocation of ids started, and whether
// it has ended, all at once; bad is the call's answer when one is unknown
// or cannot be read.
func (f *Front) invocationStarts(ctx context.Context, ids []string) (started []time.Time, closed []bool, bad *mcp.CallToolResult) {
	started, closed = make([]time.Time, len(ids)), make([]bool, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			desc, err := f.opts.Temporal.DescribeWorkflowExecution(ctx, id, "")
			var notFound *serviceerror.NotFound
			switch {
			case errors.As(err, &notFound):
				errs[i] = unknownInvocation(id)
			case err != nil:
				errs[i] = fmt.Errorf("could not reach the invocation (Temporal engine unavailable?): %v", err)
			default:
				info := desc.GetWorkflowExecutionInfo()
				started[i] = info.GetStartTime().AsTime()
				closed[i] = info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, nil, mcp.NewToolResultError(fanInFailure(i, ids[i], err))
		}
	}
	return started, closed, nil
}

// ackBlockers acks, all at once, each blocker the call is about to report
// (a releasable wait returned it untaken): once acked, the next wait does
// not return it again. An ack that fails leaves the blocker for the next
// wait, which reports it again: at least once, never zero times.
func (f *Front) ackBlockers(ctx context.Context, ids []string, got []workflows.AgentWaitAnswer) {
	var wg sync.WaitGroup
	for i, a := range got {
		if a.PendingBlocker != "" {
			wg.Go(func() {
				f.signalInvocation(ctx, ids[i], workflows.AgentAckBlockerSignal, workflows.AgentAckBlocker{Key: a.PendingBlocker})
			})
		}
	}
	wg.Wait()
}

// signalInvocation sends invocation id a signal, bounded by
// agentSignalTimeout and not cancelled with ctx (a caller that hung up
// releases its waits too); a failure is logged.
func (f *Front) signalInvocation(ctx context.Context, id, name string, arg any) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), agentSignalTimeout)
	defer cancel()
	if err := f.opts.Temporal.SignalWorkflow(sctx, id, "", name, arg); err != nil {
		f.opts.Logger.Debug("signal an invocation", "invocation", id, "signal", name, "error", err)
	}
}

// fanInUnknown is the answer about invocation_ids[i], id, which start_agent
// did not return to the caller.
func fanInUnknown(i int, id string) string {
	return fmt.Sprintf("wait_agent: invocation_ids[%d]: %q is not an invocation ID returned by start_agent", i, id)
}

// fanInFailure is a fan-in's answer when its wait on invocation_ids[i],
// id, failed with err.
func fanInFailure(i int, id string, err error) string {
	var unknown unknownInvocationError
	if errors.As(err, &unknown) {
		return fanInUnknown(i, id)
	}
	return fmt.Sprintf("wait_agent: invocation_ids[%d] (%s): %v", i, id, err)
}

// invocationEvent is an in-process event of one of a fan-in's invocations.
type invocationEvent struct {
	id    string
	event workflows.WaitEvent
}

// subscribeAll merges the in-process events of the invocations ids.
func (f *Front) subscribeAll(ids []string) (<-chan invocationEvent, func()) {
	out := make(chan invocationEvent, 16)
	done := make(chan struct{})
	var wg sync.WaitGroup
	var stops []func()
	for _, id := range ids {
		events, stop := f.subscribe(sharedWait{id: id})
		stops = append(stops, stop)
		if events == nil {
			continue
		}
		wg.Go(func() {
			for {
				select {
				case ev := <-events:
					select {
					case out <- invocationEvent{id: id, event: ev}:
					case <-done:
						return
					}
				case <-done:
					return
				}
			}
		})
	}
	return out, func() {
		close(done)
		wg.Wait()
		for _, stop := range stops {
			stop()
		}
	}
}

// isFanIn reports whether a wait_agent call names several invocations
// (invocation_ids).
func isFanIn(req mcp.CallToolRequest) bool {
	args, ok := req.Params.Arguments.(map[string]any)
	if !ok {
		return false
	}
	_, many := args["invocation_ids"]
	return many
}

// drainPending hands fn what ch holds now, without waiting for more.
func drainPending[T any](ch <-chan T, fn func(T)) {
	for {
		select {
		case v := <-ch:
			fn(v)
		default:
			return
		}
	}
}
