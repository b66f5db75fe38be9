package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Names of the agent invocation workflow, its activities, signals, update and
// query; part of the durable contract with running histories.
const (
	AgentWorkflowName      = "AgentInvocation"
	ClaimAgentHostActivity = "ClaimAgentHost"
	// AgentHostsPollingActivity counts the agent hosts polling their queue
	// (AgentHostsPollingInput; any worker runs it, as a local activity).
	AgentHostsPollingActivity = "AgentHostsPolling"
	RunAgentActivityName      = "RunAgent"
	// AgentLiveActivityName asks the run's host what the CLI is doing now
	// (AgentLiveInput, answered with an AgentLive).
	AgentLiveActivityName = "AgentLive"
	AgentBlockerSignal    = "blocker"
	AgentCancelSignal     = "cancel"
	AgentWaitUpdate       = "wait"
	AgentStateQuery       = "state"
	// AgentReleaseWaitSignal ends, at once, the wait updates in flight
	// whose request named its key (AgentReleaseWait).
	AgentReleaseWaitSignal = "release-wait"
	// AgentAckBlockerSignal says a blocker a releasable wait returned
	// (AgentWaitAnswer.PendingBlocker) reached its caller (AgentAckBlocker).
	AgentAckBlockerSignal = "ack-blocker"
)

// Temporal error types (the Type of a temporal.ApplicationError) of the
// RunAgent activity's failures. They are not error codes: the workflow
// reports each as the invocation error code ErrCodeStart.
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

// agentLiveTimeout bounds how long a wait_agent answer waits for the run's
// host to say what the CLI is doing: a host that does not answer in time
// (it is down) leaves the live fields out.
const agentLiveTimeout = 3 * time.Second

// AgentInvocationInput is the input of the AgentInvocation workflow.
type AgentInvocationInput struct {
	Spec AgentSpec `json:"spec"`
	// MaxRun bounds the whole CLI run.
	MaxRun time.Duration `json:"max_run"`
	// AnswerWait is how long the invocation stays open, once its CLI
	// exited, for the answer to a blocker an answering caller was asked
	// (agents.answer_wait_sec); 0: not at all.
	AnswerWait time.Duration `json:"answer_wait,omitempty"`
}

// AgentHostClaim is a claim's answer: the host that runs the CLI, its
// machine, and the folder there where the run's output is spooled.
type AgentHostClaim struct {
	Host    string `json:"host"`
	Machine string `json:"machine"`
	Spool   string `json:"spool"`
}

// RunAgentInput is the input of the RunAgent activity.
type RunAgentInput struct {
	InvocationID string    `json:"invocation_id"`
	Spec         AgentSpec `json:"spec"`
	// Machine and Spool are the claiming host's machine and spool folder:
	// a host that adopts the run on that machine follows it there.
	Machine string `json:"machine"`
	Spool   string `json:"spool"`
	// Deadline is when the run must end (the invocation's start plus
	// agents.max_run_sec): the host stops the CLI then.
	Deadline time.Time `json:"deadline"`
	// MaxRun is agents.max_run_sec, for the message.
	MaxRun time.Duration `json:"max_run"`
	// Turn, when set, is the answer this run starts with: a run started
	// after the CLI of the turn before it exited (its blocker answered
	// while the invocation waited for the answer).
	Turn *AgentTurn `json:"turn,omitempty"`
}

// AgentLiveInput names the run whose live state is asked for.
type AgentLiveInput struct {
	InvocationID string `json:"invocation_id"`
	RunID        string `json:"run_id"`
}

// AgentFinal is how a CLI run ended.
type AgentFinal struct {
	Status    AgentStatus `json:"status"`
	Output    string      `json:"output"`
	SessionID string      `json:"session_id,omitempty"`
	Error     *AgentError `json:"error,omitempty"`
	// Turn is the turn whose CLI ended so (0: the first).
	Turn int `json:"turn,omitempty"`
}

// AgentLive is what the CLI is doing now, as its host answers AgentLive
// (AgentLive.Tail trims it) and a running payload carries it
// (AssemblePayload).
type AgentLive struct {
	SessionID  string         `json:"session_id,omitempty"`
	Reply      string         `json:"reply,omitempty"`
	ReplyAt    time.Time      `json:"reply_at"`
	Activity   *AgentActivity `json:"activity,omitempty"`
	ActivityAt time.Time      `json:"activity_at"`
}

// AgentProgress is what an agent run reports, in process, each time its
// state changes: what the CLI is doing, a new blocker, or its exit. Calls of
// wait_agent turn it into progress notifications.
type AgentProgress struct {
	// Step counts the changes from 1 within one run on a host.
	Step int
	// Message says what changed, for a person.
	Message string
}

// AgentWaitRequest is the argument of the wait update.
type AgentWaitRequest struct {
	Window time.Duration `json:"window"`
	// Principal is the caller's ("" for the local user). The invocation's
	// worker refuses a wait of another principal's invocation (its ID says
	// whose it is), as the front end does: a request that did not come
	// through a front end gets no more.
	Principal string `json:"principal,omitempty"`
	// Answers: the caller can answer blockers (a task of the tasks
	// extension), so a blocker waiting for an answer wakes it even when
	// it woke another wait before; a plain wait_agent is woken once per
	// blocker.
	Answers bool `json:"answers,omitempty"`
	// Release, when set, makes the wait releasable, for a wait_agent on
	// several invocations: an AgentReleaseWaitSignal with this key ends it
	// before its window (answering wait_elapsed, without asking the host
	// for live output), and it takes no blocker: one it returns stays
	// undelivered (AgentWaitAnswer.PendingBlocker) until the caller acks it
	// (AgentAckBlockerSignal), so a caller that never got the answer gets
	// it again.
	Release string `json:"release,omitempty"`
}

// AgentReleaseWait is the argument of the release-wait signal.
type AgentReleaseWait struct {
	Key string `json:"key"`
}

// AgentAckBlocker is the argument of the ack-blocker signal: the key of the
// blocker that reached its caller.
type AgentAckBlocker struct {
	Key string `json:"key"`
}

// releaseMemory is how long an invocation remembers a release key: past
// the longest window a wait may ask for, no wait in flight can name it.
const releaseMemory = 15 * time.Minute

// AgentCancelRequest is the argument of the cancel signal (cancel_agent).
type AgentCancelRequest struct {
	// Principal is the caller's ("" for the local user). The invocation
	// ignores a cancel of another principal's invocation, as the front end
	// refuses it.
	Principal string `json:"principal,omitempty"`
}

// validateAgentWait refuses a wait whose caller does not own the
// invocation id. An update a validator refuses is not recorded: the check
// changes no history.
func validateAgentWait(id string, req AgentWaitRequest) error {
	return notTheCallers(id, req.Principal, "a wait")
}

// notTheCallers is the non-retryable error, naming the rule, for a
// request (what, for the message) of principal on invocation id when the
// ID does not name that principal; nil when it does.
func notTheCallers(id, principal, what string) error {
	if strings.HasPrefix(id, AgentIDPrefix) && !Owns(principal, id) {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("invocation %s is not the caller's: %s names the principal that started the invocation (the front end's rule, checked again by its worker)", id, what),
			ErrTypeNotTheCallers, nil)
	}
	return nil
}

// ErrTypeNotTheCallers: the worker refuses a wait or a cancel on another
// principal's invocation.
const ErrTypeNotTheCallers = "NotTheCallers"

// ErrTypeNotFollowed: the run's host does not follow its CLI now (AgentLive);
// the wait answers without the live fields.
const ErrTypeNotFollowed = "NotFollowed"

// takeCancel reads one cancel signal from c (which holds one) and reports
// whether it stops the run: not when its principal is not the invocation's
// (a signal cannot answer its sender, so the refusal is logged, naming the
// rule), nor when its argument is not an AgentCancelRequest (the SDK drops
// it, logging a corrupted signal). An empty argument is the local user's.
func takeCancel(ctx workflow.Context, id string, c workflow.ReceiveChannel) bool {
	var req AgentCancelRequest
	if !c.ReceiveAsync(&req) {
		return false
	}
	if err := notTheCallers(id, req.Principal, "a cancel"); err != nil {
		workflow.GetLogger(ctx).Warn("cancel signal ignored", "invocation", id, "error", err)
		return false
	}
	return true
}

type agentState struct {
	started time.Time
	// deadline is when the run must end (started plus agents.max_run_sec).
	deadline  time.Time
	final     *AgentFinal
	blockers  []AgentBlocker
	delivered int // blockers[:delivered] have woken a wait
	// turns are the answers taken, in order: turn n is turns[n-1].
	turns []AgentTurn
	// declined are the blockers (by Key) whose answer was declined.
	declined map[string]bool
	// offered are the blockers (by Key) a wait that can answer them
	// returned: an answer is awaited for them once the CLI exited
	// (holdForAnswer).
	offered map[string]bool
	// holding: the CLI exited, and the invocation waits for an answer.
	holding bool
	// answered is told each answer or decline taken while holding.
	answered workflow.Channel
	// heldFinal is how the CLI ended, kept while an answer taken while
	// holding clears final (a cancel that comes with it restores it).
	heldFinal *AgentFinal
	// cancelled: a cancel_agent (or an operator's cancel) came.
	cancelled bool
	// host runs the CLI, once claimed.
	host string
	// endUpserted: the end state is upserted.
	endUpserted bool
	// released are the release keys signalled (AgentReleaseWait), with
	// when; forgotten after releaseMemory.
	released map[string]time.Time
}

// fanInReleaseChange is the GetVersion change ID of release-wait, asked at
// the invocation's start: a run that began before it (no marker in its
// history) ignores release-wait signals and the release key of its wait
// updates, as it did, so that its history replays.
const fanInReleaseChange = "fan-in-release"

// receiveReleases records each release-wait signal in s.released, for the
// wait updates that name its key, in every invocation begun since
// fanInReleaseChange. It runs for the workflow's life.
func (s *agentState) receiveReleases(ctx workflow.Context) {
	if workflow.GetVersion(ctx, fanInReleaseChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	s.released = map[string]time.Time{}
	releases := workflow.GetSignalChannel(ctx, AgentReleaseWaitSignal)
	acks := workflow.GetSignalChannel(ctx, AgentAckBlockerSignal)
	workflow.Go(ctx, func(ctx workflow.Context) {
		// An operator's cancel does not stop it: waits in flight still
		// answer while the run ends.
		ctx, _ = workflow.NewDisconnectedContext(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(releases, func(c workflow.ReceiveChannel, _ bool) {
			var r AgentReleaseWait
			c.Receive(ctx, &r)
			now := workflow.Now(ctx)
			for k, at := range s.released {
				if now.Sub(at) > releaseMemory {
					delete(s.released, k)
				}
			}
			if r.Key != "" {
				s.released[r.Key] = now
			}
		})
		sel.AddReceive(acks, func(c workflow.ReceiveChannel, _ bool) {
			var a AgentAckBlocker
			c.Receive(ctx, &a)
			// Blockers are delivered in order: the one acked is the first
			// undelivered, unless a wait took it meanwhile.
			if s.delivered < len(s.blockers) && s.blockers[s.delivered].Key() == a.Key {
				s.delivered++
			}
		})
		for {
			sel.Select(ctx)
		}
	})
}

// addBlocker records a blocker the run's host signalled, unless it has it
// (each category wakes once per turn) or it is of a turn an answer ended
// (signalled late); it reports whether it recorded it.
func (s *agentState) addBlocker(b AgentBlocker) bool {
	if b.Turn < len(s.turns) {
		return false
	}
	for _, seen := range s.blockers {
		if seen.Key() == b.Key() {
			return false
		}
	}
	s.blockers = append(s.blockers, b)
	return true
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

// live asks the run's host what the CLI is doing now (AgentLive), for a
// running payload; false when no host answers in time.
func (s *agentState) live(ctx workflow.Context) (AgentLive, bool) {
	if s.host == "" {
		return AgentLive{}, false
	}
	info := workflow.GetInfo(ctx)
	lctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              HostQueue(info.TaskQueueName, s.host),
		ScheduleToCloseTimeout: agentLiveTimeout,
		Summary:                "what is the CLI doing?",
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var live AgentLive
	in := AgentLiveInput{InvocationID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID}
	if err := workflow.ExecuteActivity(lctx, AgentLiveActivityName, in).Get(ctx, &live); err != nil {
		return AgentLive{}, false
	}
	return live, true
}

// AgentInvocation is one sub-agent CLI run. The CLI runs on the host that
// claimed it, as one activity on that host's queue with no heartbeat (see
// loops.go): the run's engine work is its start, its blockers and its end,
// however long it runs. Blockers arrive as signals; wait_agent is an update
// that returns when the run finishes, when a blocker category is seen for
// the first time, or when its window passes (then with what the CLI is
// doing, which it asks the host).
//
// A run upserts DurawaitState (running, then agentEndState) and
// DurawaitAgentStatus (running; blocked when a blocker is seen; then the
// final status), so a failed or blocked agent reads as such in the list
// although its workflow completes (it must, for wait_agent to read its
// payload).
func AgentInvocation(ctx workflow.Context, in AgentInvocationInput) (InvocationPayload, error) {
	st := &agentState{started: workflow.Now(ctx), declined: map[string]bool{}, offered: map[string]bool{}, answered: workflow.NewBufferedChannel(ctx, 1)}
	st.deadline = st.started.Add(in.MaxRun)
	honest := closesHonestly(ctx)
	setState(ctx, StateRunning, KeyAgentStatus.ValueSet(string(AgentRunning)))
	p, err := agentInvocation(ctx, in, st)
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
	if err == nil {
		err = closeError(p, honest)
	}
	return p, err
}

// agentInvocation is AgentInvocation's body. It records in st.endUpserted
// that it upserted the end state.
func agentInvocation(ctx workflow.Context, in AgentInvocationInput, st *agentState) (InvocationPayload, error) {
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	st.receiveReleases(ctx)

	wake := func() bool { return st.final != nil || st.delivered < len(st.blockers) }
	// wakeAnswerable: a wait that can answer blockers wakes on one
	// waiting for its answer too.
	wakeAnswerable := func() bool { return wake() || st.waitingAnswer() != nil }
	answer := func(ctx workflow.Context, answers bool) InvocationPayload {
		if b := st.waitingAnswer(); answers && b != nil && (st.final != nil || st.delivered >= len(st.blockers)) {
			// A blocker waiting for its answer (the CLI may have exited,
			// and the invocation holds for it).
			p := st.payload(ctx, id, AgentReasonExecutionBlocked)
			p.Error = &b.AgentError
			return p
		}
		if st.final != nil {
			return st.payload(ctx, id, AgentReasonFinished)
		}
		if st.delivered < len(st.blockers) {
			b := st.blockers[st.delivered]
			st.delivered++
			p := st.payload(ctx, id, AgentReasonExecutionBlocked)
			p.Error = &b.AgentError
			return p
		}

		p := st.payload(ctx, id, AgentReasonWaitElapsed)
		if live, ok := st.live(ctx); ok && st.final == nil {
			p = AssemblePayload(p, live, workflow.Now(ctx))
		}
		return p
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, AgentWaitUpdate, func(ctx workflow.Context, req AgentWaitRequest) (AgentWaitAnswer, error) {
		// An operator's cancel of the workflow does not fail a wait in
		// flight: it answers with the cancelled run's payload.
		ctx, _ = workflow.NewDisconnectedContext(ctx)
		cond := wake
		if req.Answers {
			cond = wakeAnswerable
		}
		released := func() bool {
			_, ok := st.released[req.Release] // (a nil map before fanInReleaseChange)
			return req.Release != "" && ok
		}
		if _, err := workflow.AwaitWithTimeout(ctx, req.Window, func() bool { return cond() || released() }); err != nil {
			return AgentWaitAnswer{}, err
		}
		if released() && st.final == nil {
			// Released: whatever else woke it, it returns no blocker.
			return st.waitAnswer(st.payload(ctx, id, AgentReasonWaitElapsed), req.Answers), nil
		}
		if req.Release != "" && st.released != nil && st.final == nil && st.delivered < len(st.blockers) {
			// Releasable: the blocker is returned, not taken, until the
			// caller acks it.
			b := st.blockers[st.delivered]
			p := st.payload(ctx, id, AgentReasonExecutionBlocked)
			p.Error = &b.AgentError
			out := st.waitAnswer(p, req.Answers)
			out.PendingBlocker = b.Key()
			return out, nil
		}
		return st.waitAnswer(answer(ctx, req.Answers), req.Answers), nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req AgentWaitRequest) error {
		return validateAgentWait(workflow.GetInfo(ctx).WorkflowExecution.ID, req)
	}}); err != nil {
		return InvocationPayload{}, err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, AgentAnswerUpdate, func(ctx workflow.Context, req AgentAnswerRequest) (AgentWaitAnswer, error) {
		ctx, _ = workflow.NewDisconnectedContext(ctx)
		b := st.outstanding(req.Code)
		if b == nil || !st.takeAnswer(ctx, req) {
			// Another answer, validated in the same task, took it first.
			return AgentWaitAnswer{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("code: the %s blocker of invocation %s was answered by another call", req.Code, id), ErrTypeNotAnswerable, nil)
		}
		if req.Decline {
			p := st.payload(ctx, id, AgentReasonExecutionBlocked)
			p.Error = &b.AgentError
			return st.waitAnswer(p, true), nil
		}
		if _, err := workflow.AwaitWithTimeout(ctx, req.Window, wakeAnswerable); err != nil {
			return AgentWaitAnswer{}, err
		}
		return st.waitAnswer(answer(ctx, true), true), nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req AgentAnswerRequest) error {
		return st.validateAgentAnswer(id, req)
	}}); err != nil {
		return InvocationPayload{}, err
	}
	if err := workflow.SetQueryHandler(ctx, AgentStateQuery, func() (InvocationPayload, error) {
		return st.payload(ctx, id, AgentReasonWaitElapsed), nil
	}); err != nil {
		return InvocationPayload{}, err
	}
	if err := workflow.SetQueryHandler(ctx, AgentAnswerableQuery, func() ([]string, error) {
		return st.waitingKeys(), nil
	}); err != nil {
		return InvocationPayload{}, err
	}

	// Claim a host: the first agent host to take the claim runs the CLI.
	claim, err := claimHost(ctx, in.Spec.Provider)
	if err != nil {
		if ctx.Err() != nil {
			// An operator cancelled it before any host ran the CLI: it
			// ends Canceled with a cancelled payload for wait_agent.
			st.final = &AgentFinal{Status: AgentCancelled}
			final := st.payload(ctx, id, AgentReasonFinished)
			return final, temporal.NewCanceledError(final)
		}
		st.final = &AgentFinal{Status: AgentFailed, Error: &AgentError{Code: ErrCodeStart, Message: unclaimedMessage(err)}}
		return st.finish(ctx, id)
	}
	st.host = claim.Host
	setHost(ctx, claim.Host)

	// max_run_sec bounds the run as a whole: its host stops the CLI at the
	// deadline and answers with what it had said. Temporal's timer (the
	// deadline plus LoopGrace) ends the run if no host is left to.
	var run workflow.Future
	var cancelRun workflow.CancelFunc
	start := func(turn *AgentTurn) {
		var runCtx workflow.Context
		runCtx, cancelRun = workflow.WithCancel(ctx)
		bound := in.MaxRun
		if turn != nil {
			bound = st.deadline.Sub(workflow.Now(ctx))
		}
		runCtx = loopOptions(runCtx, claim.Host, bound, TruncateUTF8(oneLine("run the "+in.Spec.Provider+" CLI in "+in.Spec.Cwd), MaxSummaryBytes), true)
		run = workflow.ExecuteActivity(runCtx, RunAgentActivityName, RunAgentInput{
			InvocationID: id, Spec: in.Spec, Machine: claim.Machine, Spool: claim.Spool, Deadline: st.deadline, MaxRun: in.MaxRun, Turn: turn,
		})
	}
	start(nil)

	cancel := func() {
		if !st.cancelled {
			st.cancelled = true
			cancelRun()
			stopLoop(ctx, claim.Host)
		}
	}
	// running waits for the run's end, its blockers and a cancel_agent;
	// until a cancel, an operator's cancel of the workflow too (once it
	// is cancelled, ctx.Done is always ready).
	running := func(watchDone bool) workflow.Selector {
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(run, func(f workflow.Future) {
			var final AgentFinal
			err := awaitLoop(ctx, f, claim.Host, &final)
			st.final = finalFrom(final, err, st.cancelled, in.MaxRun)
		})
		sel.AddReceive(workflow.GetSignalChannel(ctx, AgentBlockerSignal), func(c workflow.ReceiveChannel, _ bool) {
			var b AgentBlocker
			c.Receive(ctx, &b)
			st.addBlocker(b)
			if b.Turn >= len(st.turns) {
				// (Every blocker of the current turn, a repeated one too:
				// histories recorded before turns upsert at each signal.)
				setState(ctx, StateRunning, KeyAgentStatus.ValueSet(string(AgentBlocked)))
			}
		})
		sel.AddReceive(workflow.GetSignalChannel(ctx, AgentCancelSignal), func(c workflow.ReceiveChannel, _ bool) {
			if takeCancel(ctx, id, c) {
				cancel()
			}
		})
		if watchDone {
			sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) { cancel() })
		}
		return sel
	}
	for {
		sel, watchingDone := running(!st.cancelled), !st.cancelled
		for st.final == nil {
			sel.Select(ctx)
			if st.cancelled && watchingDone {
				sel, watchingDone = running(false), false
			}
		}
		// The CLI exited. An answer it did not get (taken as it exited)
		// starts its turn now; a blocker an answering caller was asked
		// keeps the invocation open for its answer, which starts the next
		// turn.
		turn := st.untakenTurn(ctx)
		if turn == nil {
			turn = st.holdForAnswer(ctx, id, in.AnswerWait)
		}
		if turn == nil {
			break
		}
		start(turn)
	}
	return st.finish(ctx, id)
}

// finish records how the invocation ended (st.final), lets every wait_agent
// in flight answer, and returns the final payload.
func (st *agentState) finish(ctx workflow.Context, id string) (InvocationPayload, error) {
	_ = workflow.UpsertMemo(ctx, map[string]any{"status": string(st.final.Status)})
	setState(ctx, agentEndState(st.final), KeyAgentStatus.ValueSet(string(st.final.Status)))
	st.endUpserted = true
	// Let every wait_agent in flight answer before the workflow closes.
	// After an operator's cancel ctx is cancelled, and Await on it would
	// return at once: await on a disconnected context (which records no
	// commands).
	awaitCtx, _ := workflow.NewDisconnectedContext(ctx)
	if err := workflow.Await(awaitCtx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return InvocationPayload{}, err // as is: a CanceledError ends the workflow Canceled
	}
	final := st.payload(ctx, id, AgentReasonFinished)
	if ctx.Err() != nil && st.final.Status == AgentCancelled {
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
	case errors.As(err, &timeoutErr):
		// Temporal's bound on the run (max_run_sec plus LoopGrace): the
		// host that should have stopped the CLI at max_run_sec was down.
		return &AgentFinal{Status: AgentFailed, Error: &AgentError{
			Code: ErrCodeTimeout,
			Message: fmt.Sprintf("the run exceeded agents.max_run_sec (%d s) while no worker on its host was up to stop the CLI and read its last output; "+
				"the host stops the CLI when it comes back", int64(maxRun/time.Second)),
		}}
	case errors.As(err, &appErr):
		// The run's failures (ErrTypeAgent*) all mean the CLI did not
		// start.
		code, msg = ErrCodeStart, appErr.Message()
	}
	return &AgentFinal{Status: AgentFailed, Error: &AgentError{Code: code, Message: msg}}
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
