package workflows

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Names of the agent invocation workflow, its activities, signals, update and
// query; part of the durable contract with running histories.
const (
	AgentWorkflowName      = "AgentInvocation"
	ClaimAgentHostActivity = "ClaimAgentHost"
	// AgentHostsPollingActivity counts the agent hosts polling their queue
	// (AgentHostsPollingInput; any worker of this release runs it).
	AgentHostsPollingActivity = "AgentHostsPolling"
	RunAgentActivityName      = "RunAgent"
	AgentBlockerSignal        = "blocker"
	AgentCancelSignal         = "cancel"
	AgentWaitUpdate           = "wait"
	AgentStateQuery           = "state"
)

// Temporal error types (the Type of a temporal.ApplicationError) of the
// RunAgent activity's non-retryable failures. They are not error codes: the
// workflow reports each as the invocation error code ErrCodeStart.
const (
	// ErrTypeAgentInvalidCwd: the cwd does not resolve inside the allowed roots.
	ErrTypeAgentInvalidCwd = "InvalidCwd"
	// ErrTypeAgentUnknownConfig: the provider or its output format is not
	// configured on the worker.
	ErrTypeAgentUnknownConfig = "UnknownProvider"
	// ErrTypeAgentStartFailed: the CLI could not be started (the prompt
	// would be read as an option, or the process did not start).
	ErrTypeAgentStartFailed = "AgentStartFailed"
)

// AgentHeartbeatTimeout bounds how long a lost agent runner goes unnoticed.
const AgentHeartbeatTimeout = 10 * time.Second

// AgentInvocationInput is the input of the AgentInvocation workflow.
type AgentInvocationInput struct {
	Spec AgentSpec `json:"spec"`
	// MaxRun bounds the whole CLI run.
	MaxRun time.Duration `json:"max_run"`
}

// RunAgentInput is the input of the RunAgent activity.
type RunAgentInput struct {
	InvocationID string    `json:"invocation_id"`
	Spec         AgentSpec `json:"spec"`
}

// AgentFinal is how a CLI run ended.
type AgentFinal struct {
	Status    AgentStatus `json:"status"`
	Output    string      `json:"output"`
	SessionID string      `json:"session_id,omitempty"`
	Error     *AgentError `json:"error,omitempty"`
}

// AgentLive is what the CLI is doing now; the RunAgent activity heartbeats
// it (AgentLive.Heartbeat) and AssemblePayload fills running payloads from
// it.
type AgentLive struct {
	SessionID  string         `json:"session_id,omitempty"`
	Reply      string         `json:"reply,omitempty"`
	ReplyAt    time.Time      `json:"reply_at"`
	Activity   *AgentActivity `json:"activity,omitempty"`
	ActivityAt time.Time      `json:"activity_at"`
	// Blockers are the categories already signalled to the workflow.
	Blockers []string `json:"blockers,omitempty"`
}

// AgentProgress is what an agent run reports, in process, each time its
// state changes: what the CLI is doing, a new blocker, or its exit. Calls of
// wait_agent turn it into progress notifications.
type AgentProgress struct {
	// Step counts the changes from 1 within one run of the activity.
	Step int
	// Message says what changed, for a person.
	Message string
}

// AgentWaitRequest is the argument of the wait update.
type AgentWaitRequest struct {
	Window time.Duration `json:"window"`
}

type agentState struct {
	started   time.Time
	final     *AgentFinal
	blockers  []AgentError
	delivered int // blockers[:delivered] have woken a wait
	// endUpserted: the end state is upserted (observable runs).
	endUpserted bool
}

func (s *agentState) addBlocker(b AgentError) {
	for _, seen := range s.blockers {
		if seen.Code == b.Code {
			return // each category wakes once per invocation
		}
	}
	s.blockers = append(s.blockers, b)
}

func (s *agentState) payload(ctx workflow.Context, id string, reason AgentReason) InvocationPayload {
	p := InvocationPayload{
		InvocationID: id,
		Status:       AgentRunning,
		Reason:       reason,
		ElapsedMs:    workflow.Now(ctx).Sub(s.started).Milliseconds(),
	}
	if s.final != nil {
		out := s.final.Output
		p.Status, p.Output, p.SessionID, p.Error = s.final.Status, &out, s.final.SessionID, s.final.Error
	}
	return p
}

// AgentInvocation is one sub-agent CLI run. The CLI runs in one heartbeating
// activity on the task queue of the host that claimed it (its output is
// spooled on that host's disk). Blockers arrive as signals; wait_agent is an
// update that returns when the run finishes, when a blocker category is seen
// for the first time, or when its window passes.
//
// A run begun by this release upserts DurawaitState (running, then
// agentEndState) and DurawaitAgentStatus (running; blocked when a blocker
// is seen; then the final status), so a failed or blocked agent reads as
// such in the list although its workflow completes (it must, for wait_agent
// to read its payload).
func AgentInvocation(ctx workflow.Context, in AgentInvocationInput) (InvocationPayload, error) {
	st := &agentState{started: workflow.Now(ctx)}
	if !observable(ctx) {
		return agentInvocation(ctx, in, st, false)
	}
	setState(ctx, StateRunning, KeyAgentStatus.ValueSet(string(AgentRunning)))
	p, err := agentInvocation(ctx, in, st, true)
	if !st.endUpserted {
		// It ended before its run did (cancelled or failed while
		// claiming a host): its state must not stay running.
		state, status := StateError, AgentFailed
		var canceled *temporal.CanceledError
		if errors.As(err, &canceled) {
			state, status = StateCancelled, AgentCancelled
		}
		setState(ctx, state, KeyAgentStatus.ValueSet(string(status)))
	}
	return p, err
}

// agentInvocation is AgentInvocation's body; obs says whether the run
// upserts search attributes (observable). It records in st.endUpserted
// that it upserted the end state.
func agentInvocation(ctx workflow.Context, in AgentInvocationInput, st *agentState, obs bool) (InvocationPayload, error) {
	id := workflow.GetInfo(ctx).WorkflowExecution.ID

	wake := func() bool { return st.final != nil || st.delivered < len(st.blockers) }
	answer := func(ctx workflow.Context) InvocationPayload {
		if st.final != nil {
			return st.payload(ctx, id, AgentReasonFinished)
		}
		if st.delivered < len(st.blockers) {
			b := st.blockers[st.delivered]
			st.delivered++
			p := st.payload(ctx, id, AgentReasonExecutionBlocked)
			p.Error = &b
			return p
		}
		return st.payload(ctx, id, AgentReasonWaitElapsed)
	}
	if err := workflow.SetUpdateHandler(ctx, AgentWaitUpdate, func(ctx workflow.Context, req AgentWaitRequest) (InvocationPayload, error) {
		if obs {
			// An operator's cancel of the workflow does not fail a wait
			// in flight: it answers with the cancelled run's payload.
			ctx, _ = workflow.NewDisconnectedContext(ctx)
		}
		if _, err := workflow.AwaitWithTimeout(ctx, req.Window, wake); err != nil {
			return InvocationPayload{}, err
		}
		return answer(ctx), nil
	}); err != nil {
		return InvocationPayload{}, err
	}
	if err := workflow.SetQueryHandler(ctx, AgentStateQuery, func() (InvocationPayload, error) {
		return st.payload(ctx, id, AgentReasonWaitElapsed), nil
	}); err != nil {
		return InvocationPayload{}, err
	}

	// Claim a host: the first worker to take this activity runs the CLI.
	hostQueue, err := claimHost(ctx, in.Spec.Provider)
	if err != nil {
		if obs && ctx.Err() != nil {
			// An operator cancelled it before any host ran the CLI: it
			// ends Canceled with a cancelled payload for wait_agent.
			st.final = &AgentFinal{Status: AgentCancelled}
			final := st.payload(ctx, id, AgentReasonFinished)
			return final, temporal.NewCanceledError(final)
		}
		if !unclaimedEndsFailed(ctx) {
			var lost *hostsLostError
			var none *noHostError
			switch {
			case errors.As(err, &lost):
				err = lost.err
			case errors.As(err, &none):
				err = none.err
			}
			return InvocationPayload{}, err // as is: its Temporal type decides how the workflow ends
		}
		st.final = &AgentFinal{Status: AgentFailed, Error: &AgentError{Code: ErrCodeStart, Message: unclaimedMessage(err)}}
		return st.finish(ctx, id, obs)
	}

	// max_run_sec bounds the run as a whole: the schedule-to-close timeout
	// spans every attempt (a retry after a lost worker, a resumed session)
	// and each attempt's context ends at the same instant, when the runner
	// stops the CLI. No grace is added: Temporal's timer is the bound, and
	// the last heartbeat carries what the run had said by then.
	runCtx, cancelRun := workflow.WithCancel(ctx)
	runCtx = workflow.WithActivityOptions(runCtx, workflow.ActivityOptions{
		TaskQueue:              hostQueue,
		ScheduleToCloseTimeout: in.MaxRun,
		HeartbeatTimeout:       AgentHeartbeatTimeout,
		WaitForCancellation:    true,
		Summary:                TruncateUTF8(oneLine("run the "+in.Spec.Provider+" CLI in "+in.Spec.Cwd), MaxSummaryBytes),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			MaximumInterval:        5 * time.Second,
			NonRetryableErrorTypes: []string{ErrTypeAgentInvalidCwd, ErrTypeAgentUnknownConfig, ErrTypeAgentStartFailed},
		},
	})
	run := workflow.ExecuteActivity(runCtx, RunAgentActivityName, RunAgentInput{InvocationID: id, Spec: in.Spec})

	cancelled := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(run, func(f workflow.Future) {
		var final AgentFinal
		err := f.Get(ctx, &final)
		st.final = finalFrom(final, err, cancelled, in.MaxRun)
	})
	sel.AddReceive(workflow.GetSignalChannel(ctx, AgentBlockerSignal), func(c workflow.ReceiveChannel, _ bool) {
		var b AgentError
		c.Receive(ctx, &b)
		st.addBlocker(b)
		if obs {
			setState(ctx, StateRunning, KeyAgentStatus.ValueSet(string(AgentBlocked)))
		}
	})
	sel.AddReceive(workflow.GetSignalChannel(ctx, AgentCancelSignal), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		if !cancelled {
			cancelled = true
			cancelRun()
		}
	})
	for st.final == nil {
		sel.Select(ctx)
	}
	return st.finish(ctx, id, obs)
}

// finish records how the invocation ended (st.final), lets every wait_agent
// in flight answer, and returns the final payload.
func (st *agentState) finish(ctx workflow.Context, id string, obs bool) (InvocationPayload, error) {
	_ = workflow.UpsertMemo(ctx, map[string]any{"status": string(st.final.Status)})
	if obs {
		setState(ctx, agentEndState(st.final), KeyAgentStatus.ValueSet(string(st.final.Status)))
		st.endUpserted = true
	}
	// Let every wait_agent in flight answer before the workflow closes.
	// After an operator's cancel ctx is cancelled, and Await on it would
	// return at once: a run of this release awaits on a disconnected
	// context (which records no commands).
	awaitCtx := ctx
	if obs {
		awaitCtx, _ = workflow.NewDisconnectedContext(ctx)
	}
	if err := workflow.Await(awaitCtx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return InvocationPayload{}, err // as is: a CanceledError ends the workflow Canceled
	}
	final := st.payload(ctx, id, AgentReasonFinished)
	if obs && ctx.Err() != nil && st.final.Status == AgentCancelled {
		// An operator cancelled the workflow itself (cancel_agent is a
		// signal) before its run ended: it ends Canceled, its payload in
		// the cancellation's details for wait_agent. A run that had
		// already ended otherwise keeps its result.
		return final, temporal.NewCanceledError(final)
	}
	return final, nil
}

// finalFrom maps the run's outcome to how the invocation ended; maxRun is
// the invocation's bound (agents.max_run_sec).
func finalFrom(final AgentFinal, err error, cancelled bool, maxRun time.Duration) *AgentFinal {
	if err == nil {
		return &final
	}
	var canceledErr *temporal.CanceledError
	if errors.As(err, &canceledErr) || cancelled {
		var partial AgentFinal
		if canceledErr != nil && canceledErr.HasDetails() {
			_ = canceledErr.Details(&partial)
		}
		partial.Status = AgentCancelled
		partial.Error = nil
		return &partial
	}
	code, msg := ErrCodeWorkerLost, err.Error()
	var appErr *temporal.ApplicationError
	var timeoutErr *temporal.TimeoutError
	switch {
	case errors.As(err, &timeoutErr) && maxRunExpired(timeoutErr):
		// Out of time (checked first: the timeout's cause may be the
		// last attempt's retryable failure). What the CLI had said by
		// its last heartbeat is the output, and its session can be
		// resumed.
		var live AgentLive
		if timeoutErr.HasLastHeartbeatDetails() {
			_ = timeoutErr.LastHeartbeatDetails(&live)
		}
		return &AgentFinal{Status: AgentFailed, Output: live.Reply, SessionID: live.SessionID, Error: &AgentError{
			Code:    ErrCodeTimeout,
			Message: fmt.Sprintf("the run exceeded agents.max_run_sec (%d s, counted over every attempt)", int64(maxRun/time.Second)),
		}}
	case errors.As(err, &appErr):
		// The run's non-retryable failures (ErrTypeAgent*) all mean the
		// CLI did not start.
		code, msg = ErrCodeStart, appErr.Message()
	}
	return &AgentFinal{Status: AgentFailed, Error: &AgentError{Code: code, Message: msg}}
}

// maxRunExpired reports whether a run's timeout is its max_run_sec bound:
// the schedule-to-close timeout, or the start-to-close timeout of a run
// scheduled by a release that bounded each attempt alone.
func maxRunExpired(err *temporal.TimeoutError) bool {
	switch err.TimeoutType() {
	case enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, enumspb.TIMEOUT_TYPE_START_TO_CLOSE:
		return true
	}
	return false
}

// agentEndState is the DurawaitState of an invocation that ended so: a run
// that succeeded is "matched" (what was waited for happened), one that
// failed or ended blocked is "failed", a cancelled one "cancelled", and one
// whose worker was lost "error".
func agentEndState(final *AgentFinal) WaitState {
	switch final.Status {
	case AgentSucceeded:
		return StateMatched
	case AgentCancelled:
		return StateCancelled
	}
	if final.Error != nil && final.Error.Code == ErrCodeWorkerLost {
		return StateError
	}
	return StateFailed
}
