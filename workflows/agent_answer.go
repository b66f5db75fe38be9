package workflows

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Answering a blocker. A blocker the agent's CLI cannot get past on its own
// (a permission it lacks, a question for the user) can be answered when the
// CLI's provider resumes sessions: the answer update records the answer as
// the run's next turn, and the run's host stops the CLI and starts it again
// in the same provider session, with the answer as its prompt (AnswerAgent).
// The run stays one RunAgent activity, whose end is the last turn's. A
// client of the tasks extension of protocol 2026-07-28 answers through
// tasks/update (an input request of its wait_agent task); the plain
// wait_agent of 2025-11-25 is unchanged.
const (
	// AgentAnswerUpdate answers a blocker of the run's current turn
	// (AgentAnswerRequest). It is accepted only for a blocker signalled
	// and not yet answered, and returns as the wait update does, counting
	// its window from the answer.
	AgentAnswerUpdate = "answer"
	// AgentAnswerableQuery lists the keys (AgentBlocker.Key) of the
	// blockers an answer would take now.
	AgentAnswerableQuery = "answerable"
	// AnswerAgentActivityName tells the run's host to start the next turn
	// (AgentTurn); on the host's queue, retried until a run of the
	// invocation follows its CLI there.
	AnswerAgentActivityName = "AnswerAgent"
)

// AgentBlocker is a blocker as the run's host signals it: the blocker, and
// what answering it needs. Histories recorded before answers could be given
// carry only the AgentError's fields: not resumable, turn 0.
type AgentBlocker struct {
	AgentError
	// Turn is the run's turn (0: the first CLI; n: the CLI started by the
	// n-th answer) in which the blocker was seen. Each blocker category
	// wakes a wait once per turn.
	Turn int `json:"turn,omitempty"`
	// SessionID is the provider session the CLI runs in, which an answer
	// resumes.
	SessionID string `json:"session_id,omitempty"`
	// Resumable: the provider has a resume template and the CLI named its
	// session, so an answer can resume it.
	Resumable bool `json:"resumable,omitempty"`
}

// Answerable reports whether a blocker of category code can be answered:
// a permission the agent lacks, a question for the user. A rate limit,
// billing or a failed login is not lifted by a prompt.
func Answerable(code string) bool { return code == BlockerPermission || code == BlockerQuestion }

// Key tells blockers apart within an invocation: the category, with the
// turn after the first.
func (b AgentBlocker) Key() string { return BlockerKey(b.Turn, b.Code) }

// BlockerKey is the key of the blocker of category code in turn.
func BlockerKey(turn int, code string) string {
	if turn == 0 {
		return code
	}
	return code + "@" + strconv.Itoa(turn)
}

// AgentAnswerRequest is the argument of the answer update.
type AgentAnswerRequest struct {
	// Principal is the caller's ("" for the local user).
	Principal string `json:"principal,omitempty"`
	// Code is the category of the blocker answered, in the current turn.
	Code string `json:"code"`
	// Key, when set, is the blocker's key (AgentBlocker.Key), which it
	// must still be: an answer meant for a turn before is refused.
	Key string `json:"key,omitempty"`
	// Answer is what the agent is told: the prompt of its next turn.
	// Empty with Decline.
	Answer string `json:"answer,omitempty"`
	// Decline: the user declined to answer; the agent stays as it is and
	// the blocker is not offered again.
	Decline bool `json:"decline,omitempty"`
	// Window is how long the update waits after the answer, as the wait
	// update's.
	Window time.Duration `json:"window"`
}

// AgentTurn is a run's next turn, as AnswerAgent carries it to its host:
// the CLI is started again in SessionID with Answer as its prompt.
type AgentTurn struct {
	InvocationID string `json:"invocation_id"`
	RunID        string `json:"run_id"`
	// Turn counts the answers from 1.
	Turn      int    `json:"turn"`
	SessionID string `json:"session_id"`
	Answer    string `json:"answer"`
}

// AgentWaitAnswer is what the wait and answer updates return: the
// invocation's payload (the tool's answer, exactly as the output schema
// has it), and whether its blocker can be answered. Decoded as an
// InvocationPayload it is the payload.
type AgentWaitAnswer struct {
	InvocationPayload
	// Answerable: the payload is a blocker (execution_blocked) that the
	// answer update would take.
	Answerable bool `json:"answerable,omitempty"`
	// BlockerKey is that blocker's key (AgentBlocker.Key): the answers of
	// different turns are told apart by it.
	BlockerKey string `json:"blocker_key,omitempty"`
	// PendingBlocker is the key of the blocker a releasable wait
	// (AgentWaitRequest.Release) returned without taking it: the caller
	// acks it once the blocker reached its own caller.
	PendingBlocker string `json:"pending_blocker,omitempty"`
}

// MaxAnswerBytes bounds an answer: it becomes the CLI's prompt, which the
// presets pass as one argument (activities.MaxArgBytes, less room for the
// rest of the argument).
const MaxAnswerBytes = 120 << 10

// answerDeliveryTimeout bounds the retries of AnswerAgent past the run's
// deadline: by then the run has ended, and no turn starts.
const answerDeliveryTimeout = LoopGrace

// outstanding is the current turn's blocker of category code that an
// answer would take, or nil: while the CLI runs, or while the invocation
// holds for an answer after it exited.
func (s *agentState) outstanding(code string) *AgentBlocker {
	if (s.final != nil && !s.holding) || s.cancelled {
		return nil
	}
	for i := range s.blockers {
		b := &s.blockers[i]
		if b.Turn == len(s.turns) && b.Code == code && b.Resumable && !s.declined[b.Key()] {
			return b
		}
	}
	return nil
}

// waitingAnswer is the first blocker of the current turn that an answer
// would take, or nil.
func (s *agentState) waitingAnswer() *AgentBlocker {
	for _, b := range s.blockers {
		if b := s.outstanding(b.Code); b != nil {
			return b
		}
	}
	return nil
}

// waitingKeys are the keys of the blockers an answer would take now.
func (s *agentState) waitingKeys() []string {
	keys := []string{}
	for _, b := range s.blockers {
		if o := s.outstanding(b.Code); o != nil && o.Key() == b.Key() {
			keys = append(keys, b.Key())
		}
	}
	return keys
}

// validateAgentAnswer refuses an answer that the run cannot take, naming
// the field and the rule. It reads the state only.
func (s *agentState) validateAgentAnswer(id string, req AgentAnswerRequest) error {
	if err := notTheCallers(id, req.Principal, "an answer"); err != nil {
		return err
	}
	refuse := func(format string, args ...any) error {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), ErrTypeNotAnswerable, nil)
	}
	switch {
	case s.cancelled:
		return refuse("invocation %s was cancelled: there is no blocker to answer", id)
	case s.final != nil && !s.holding:
		return refuse("invocation %s has ended (%s): there is no blocker to answer", id, s.final.Status)
	}
	switch {
	case req.Code == "":
		return refuse("code: required (the category of the blocker answered)")
	case req.Decline && req.Answer != "":
		return refuse("answer: must be empty when the blocker is declined")
	case !req.Decline && strings.TrimSpace(req.Answer) == "":
		return refuse("answer: required (what the agent is told), unless the blocker is declined")
	case len(req.Answer) > MaxAnswerBytes:
		return refuse("answer: %d bytes, over the %d an answer may have (it is the CLI's prompt, one argument)", len(req.Answer), MaxAnswerBytes)
	case !utf8.ValidString(req.Answer):
		return refuse("answer: not valid UTF-8")
	case strings.ContainsRune(req.Answer, 0):
		return refuse("answer: contains a NUL character, which no argument can hold")
	case strings.HasPrefix(req.Answer, "-"):
		return refuse("answer: must not start with '-' (the CLI could read it as an option)")
	}
	if b := s.outstanding(req.Code); b != nil {
		if req.Key != "" && req.Key != b.Key() {
			return refuse("key: the blocker %s was answered; the one waiting now is %s", req.Key, b.Key())
		}
		return nil
	}
	for _, b := range s.blockers {
		if b.Turn == len(s.turns) && b.Code == req.Code && !b.Resumable {
			return refuse("code: the %s blocker cannot be answered: the agent's provider has no resume template or its CLI named no session; "+
				"call wait_agent to go on waiting, or cancel_agent", req.Code)
		}
	}
	return refuse("code: invocation %s has no %s blocker waiting for an answer (answered, declined, or not seen in its current turn)", id, req.Code)
}

// ErrTypeNotAnswerable: the answer update refuses an answer the run
// cannot take.
const ErrTypeNotAnswerable = "NotAnswerable"

// takeAnswer records an answer the validator accepted: a decline marks the
// blocker; an answer starts the next turn on the run's host. It returns
// false when another answer took the blocker first (two answers validated
// in one workflow task).
func (s *agentState) takeAnswer(ctx workflow.Context, req AgentAnswerRequest) bool {
	b := s.outstanding(req.Code)
	if b == nil {
		return false
	}
	if req.Decline {
		s.declined[b.Key()] = true
		if s.holding {
			s.answered.SendAsync(struct{}{})
		}
		return true
	}
	info := workflow.GetInfo(ctx)
	turn := AgentTurn{
		InvocationID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID,
		Turn: len(s.turns) + 1, SessionID: b.SessionID, Answer: req.Answer,
	}
	s.turns = append(s.turns, turn)
	// Blockers of the stopped CLI not yet told are moot.
	s.delivered = len(s.blockers)
	setState(ctx, StateRunning, KeyAgentStatus.ValueSet(string(AgentRunning)))
	if s.holding {
		// The CLI has exited: the invocation starts the turn as a run of
		// its own (holdForAnswer), and runs again.
		s.heldFinal, s.final = s.final, nil
		s.answered.SendAsync(struct{}{})
		return true
	}
	bound := s.deadline.Sub(workflow.Now(ctx)) + answerDeliveryTimeout
	dctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              HostQueue(info.TaskQueueName, s.host),
		ScheduleToCloseTimeout: max(bound, answerDeliveryTimeout),
		StartToCloseTimeout:    10 * time.Second,
		Summary:                TruncateUTF8(oneLine(fmt.Sprintf("answer the %s blocker: turn %d", req.Code, turn.Turn)), MaxSummaryBytes),
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, MaximumInterval: 5 * time.Second},
	})
	workflow.Go(ctx, func(gctx workflow.Context) {
		if err := workflow.ExecuteActivity(dctx, AnswerAgentActivityName, turn).Get(gctx, nil); err != nil {
			workflow.GetLogger(gctx).Warn("the run's host did not take the answer", "turn", turn.Turn, "error", err)
		}
	})
	return true
}

// waitAnswer is the payload a wait or answer update returns, marked
// answerable when it is a blocker an answer would take, with the blocker's
// key. A caller that can answer it (answers) is recorded as asked: the
// invocation then holds for its answer once the CLI exits.
func (s *agentState) waitAnswer(p InvocationPayload, answers bool) AgentWaitAnswer {
	out := AgentWaitAnswer{InvocationPayload: p}
	if p.Reason == AgentReasonExecutionBlocked && p.Error != nil {
		if b := s.outstanding(p.Error.Code); b != nil {
			out.Answerable, out.BlockerKey = true, b.Key()
			if answers {
				s.offered[b.Key()] = true
			}
		}
	}
	return out
}

// untakenTurn is the last answer's turn when the run's CLI exited in a
// turn before it (the answer came as it exited) and the turn may still
// run; else nil. A run that ended otherwise (it could not start, was lost,
// ran out of time) starts nothing.
func (s *agentState) untakenTurn(ctx workflow.Context) *AgentTurn {
	if s.cancelled || len(s.turns) == 0 || s.final.Turn >= len(s.turns) || !workflow.Now(ctx).Before(s.deadline) {
		return nil
	}
	if e := s.final.Error; e != nil {
		switch e.Code {
		case ErrCodeStart, ErrCodeWorkerLost, ErrCodeTimeout, ErrCodeCancelled:
			return nil
		}
	}
	turn := s.turns[len(s.turns)-1]
	s.final = nil
	return &turn
}

// holdForAnswer keeps an invocation whose CLI exited open for the answer
// to a blocker an answering caller was asked (offered), for at most
// window and never past the run's deadline: it returns the turn an answer
// starts, or nil when none came (declined, cancelled, or the window
// passed). With nothing offered, or window 0, it returns nil at once and
// records nothing.
func (s *agentState) holdForAnswer(ctx workflow.Context, id string, window time.Duration) *AgentTurn {
	waiting := func() bool {
		for key := range s.offered {
			for _, b := range s.blockers {
				if b.Key() == key && s.outstanding(b.Code) != nil {
					return true
				}
			}
		}
		return false
	}
	if window <= 0 || s.cancelled {
		return nil
	}
	s.holding = true
	defer func() { s.holding = false }()
	left := s.deadline.Sub(workflow.Now(ctx))
	if !waiting() || left <= 0 {
		return nil
	}
	before := len(s.turns)
	workflow.GetLogger(ctx).Info("the CLI exited with a blocker asked of its caller: waiting for the answer", "invocation", id, "window", min(window, left))
	tctx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	expired := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(workflow.NewTimer(tctx, min(window, left)), func(workflow.Future) { expired = true })
	sel.AddReceive(s.answered, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
	sel.AddReceive(workflow.GetSignalChannel(ctx, AgentCancelSignal), func(c workflow.ReceiveChannel, _ bool) {
		if takeCancel(ctx, id, c) {
			s.cancelled = true
		}
	})
	sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) { s.cancelled = true })
	for !expired && !s.cancelled && len(s.turns) == before && waiting() {
		sel.Select(ctx)
	}
	if s.cancelled && s.final == nil {
		// An answer came with the cancel: no turn starts, and the run
		// ends as its CLI did.
		s.final = s.heldFinal
	}
	if len(s.turns) == before || s.cancelled {
		return nil
	}
	turn := s.turns[len(s.turns)-1]
	return &turn
}
