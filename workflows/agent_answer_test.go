package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
)

func answerAgentStub(context.Context, AgentTurn) error { panic("mocked") }

// updateAt sends an update at offset and records how it went: refused (its
// error), or its answer.
type updateOutcome struct {
	refused error
	answer  AgentWaitAnswer
	done    bool
}

func updateAt(env *testsuite.TestWorkflowEnvironment, offset time.Duration, name string, arg any, out *updateOutcome) {
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { out.refused = err },
			OnComplete: func(v any, err error) {
				if err != nil {
					out.refused = err
					return
				}
				out.answer, out.done = v.(AgentWaitAnswer), true
			},
		}, arg)
	}, offset)
}

// A resumable blocker is answerable: the wait says so, a bad answer is
// refused naming its field, and an answer starts the run's next turn on
// its host, in the blocker's session, and waits again: the run's end
// answers it.
func TestAnAnswerStartsTheRunsNextTurn(t *testing.T) {
	env := newAgentEnv(t)
	var turns []AgentTurn
	env.OnActivity(AnswerAgentActivityName, mock.Anything, mock.Anything).Return(func(_ context.Context, t AgentTurn) error {
		turns = append(turns, t)
		return nil
	})
	// The first CLI exits without having taken the answer (it came as the
	// CLI exited): the answer's turn runs as a run of its own.
	var resumed []RunAgentInput
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(10*time.Minute).
		Return(AgentFinal{Status: AgentSucceeded, Output: "could not write", SessionID: "s1"}, nil).Once()
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(time.Minute).
		Return(func(_ context.Context, in RunAgentInput) (AgentFinal, error) {
			resumed = append(resumed, in)
			return AgentFinal{Status: AgentSucceeded, Output: "written", SessionID: "s1", Turn: 1}, nil
		}).Once()
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(AgentBlockerSignal, AgentBlocker{
			AgentError: AgentError{Code: BlockerPermission, Message: "Write needs approval"}, SessionID: "s1", Resumable: true,
		})
		env.SignalWorkflow(AgentBlockerSignal, AgentBlocker{AgentError: AgentError{Code: BlockerQuestion, Message: "which branch?"}})
	}, time.Minute)
	var wait, notResumable, empty, unseen, wrongTurn, answered, again updateOutcome
	updateAt(env, 2*time.Minute, AgentWaitUpdate, AgentWaitRequest{Window: 5 * time.Minute}, &wait)
	updateAt(env, 3*time.Minute, AgentAnswerUpdate, AgentAnswerRequest{Code: BlockerQuestion, Answer: "main", Window: time.Minute}, &notResumable)
	updateAt(env, 3*time.Minute, AgentAnswerUpdate, AgentAnswerRequest{Code: BlockerPermission, Answer: "  ", Window: time.Minute}, &empty)
	updateAt(env, 3*time.Minute, AgentAnswerUpdate, AgentAnswerRequest{Code: BlockerAuth, Answer: "x", Window: time.Minute}, &unseen)
	updateAt(env, 3*time.Minute, AgentAnswerUpdate, AgentAnswerRequest{Code: BlockerPermission, Key: "permission_denied@3", Answer: "x", Window: time.Minute}, &wrongTurn)
	updateAt(env, 4*time.Minute, AgentAnswerUpdate, AgentAnswerRequest{Code: BlockerPermission, Answer: "yes, write it", Window: 20 * time.Minute}, &answered)
	updateAt(env, 5*time.Minute, AgentAnswerUpdate, AgentAnswerRequest{Code: BlockerPermission, Answer: "again", Window: time.Minute}, &again)
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)

	require.True(t, env.IsWorkflowCompleted())
	require.True(t, wait.done)
	assert.Equal(t, AgentReasonExecutionBlocked, wait.answer.Reason)
	assert.Equal(t, BlockerPermission, wait.answer.Error.Code)
	assert.True(t, wait.answer.Answerable, "a resumable blocker can be answered")

	require.Error(t, notResumable.refused)
	assert.Contains(t, notResumable.refused.Error(), "cannot be answered")
	require.Error(t, empty.refused)
	assert.Contains(t, empty.refused.Error(), "answer: required")
	require.Error(t, unseen.refused)
	assert.Contains(t, unseen.refused.Error(), "no auth_failed blocker")
	require.Error(t, wrongTurn.refused, "an answer meant for another turn's blocker")
	assert.Contains(t, wrongTurn.refused.Error(), "key: the blocker permission_denied@3 was answered")

	require.True(t, answered.done, "answered: %v", answered.refused)
	assert.Equal(t, AgentReasonFinished, answered.answer.Reason, "the answer waits again, until the run's end")
	assert.Equal(t, AgentSucceeded, answered.answer.Status)
	assert.False(t, answered.answer.Answerable)
	require.NotNil(t, answered.answer.Output)
	assert.Equal(t, "written", *answered.answer.Output, "the answer's turn's end")
	require.Len(t, turns, 1)
	assert.Equal(t, AgentTurn{InvocationID: "default-test-workflow-id", RunID: turns[0].RunID, Turn: 1, SessionID: "s1", Answer: "yes, write it"}, turns[0])
	require.Len(t, resumed, 1)
	assert.Equal(t, &turns[0], resumed[0].Turn, "the answer's turn ran, in a run of its own")
	require.Error(t, again.refused, "a blocker is answered once")
	assert.Contains(t, again.refused.Error(), "no permission_denied blocker")
}

// A blocker of the next turn wakes again, though its category woke in the
// turn before; a late blocker of the stopped CLI does not.
func TestABlockerWakesOncePerTurn(t *testing.T) {
	s := &agentState{declined: map[string]bool{}}
	s.addBlocker(AgentBlocker{AgentError: AgentError{Code: BlockerPermission}, Resumable: true})
	s.addBlocker(AgentBlocker{AgentError: AgentError{Code: BlockerPermission}})
	require.Len(t, s.blockers, 1)
	s.turns = append(s.turns, AgentTurn{Turn: 1})
	s.addBlocker(AgentBlocker{AgentError: AgentError{Code: BlockerQuestion}}) // turn 0, late
	s.addBlocker(AgentBlocker{AgentError: AgentError{Code: BlockerPermission}, Turn: 1, Resumable: true})
	require.Len(t, s.blockers, 2)
	assert.Equal(t, "permission_denied@1", s.blockers[1].Key())
	assert.NotNil(t, s.outstanding(BlockerPermission), "the new turn's blocker is outstanding")
	s.declined[s.blockers[1].Key()] = true
	assert.Nil(t, s.outstanding(BlockerPermission), "a declined blocker is not")
}

// A blocker that woke a plain wait does not wake the next one (each
// category wakes once), but it wakes a wait of a caller that can answer it
// for as long as it waits for its answer.
func TestABlockerWaitingForAnAnswerWakesTheWaitsThatCanAnswerIt(t *testing.T) {
	env := newAgentEnv(t)
	env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(time.Hour).Return(AgentFinal{Status: AgentSucceeded}, nil)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(AgentBlockerSignal, AgentBlocker{AgentError: AgentError{Code: BlockerPermission}, SessionID: "s1", Resumable: true})
	}, time.Minute)
	var first, plain, answering updateOutcome
	updateAt(env, 2*time.Minute, AgentWaitUpdate, AgentWaitRequest{Window: 5 * time.Minute}, &first)
	updateAt(env, 3*time.Minute, AgentWaitUpdate, AgentWaitRequest{Window: 5 * time.Minute}, &plain)
	updateAt(env, 3*time.Minute, AgentWaitUpdate, AgentWaitRequest{Window: 5 * time.Minute, Answers: true}, &answering)
	env.ExecuteWorkflow(AgentWorkflowName, agentInput)

	require.True(t, first.done && plain.done && answering.done)
	assert.Equal(t, AgentReasonExecutionBlocked, first.answer.Reason)
	assert.Equal(t, AgentReasonWaitElapsed, plain.answer.Reason, "woken once")
	assert.Equal(t, AgentReasonExecutionBlocked, answering.answer.Reason)
	assert.True(t, answering.answer.Answerable)
	assert.InDelta(t, 180_000, answering.answer.ElapsedMs, 2000, "at once")
}

// A run whose CLI exits with a blocker an answering caller was asked holds
// for the answer: declined, it ends as its CLI did; unanswered, it ends
// when agents.answer_wait_sec passes; a blocker no answering caller was
// asked holds nothing.
func TestAnEndedRunHoldsForTheAnswerItsCallerWasAsked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ask     bool
		decline bool
		ends    time.Duration // after the CLI's exit
	}{
		{"declined", true, true, time.Minute},
		{"unanswered", true, false, 10 * time.Minute},
		{"not asked", false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newAgentEnv(t)
			exit := 5 * time.Minute
			env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(exit).
				Return(AgentFinal{Status: AgentSucceeded, Output: "could not write", SessionID: "s1"}, nil).Once()
			env.RegisterDelayedCallback(func() {
				env.SignalWorkflow(AgentBlockerSignal, AgentBlocker{AgentError: AgentError{Code: BlockerPermission}, SessionID: "s1", Resumable: true})
			}, time.Minute)
			var asked, plain, declined updateOutcome
			updateAt(env, 2*time.Minute, AgentWaitUpdate, AgentWaitRequest{Window: time.Minute, Answers: tc.ask}, &asked)
			updateAt(env, exit+30*time.Second, AgentWaitUpdate, AgentWaitRequest{Window: time.Minute}, &plain)
			if tc.decline {
				updateAt(env, exit+tc.ends, AgentAnswerUpdate, AgentAnswerRequest{Code: BlockerPermission, Decline: true, Window: time.Minute}, &declined)
			}
			in := agentInput
			in.AnswerWait = 10 * time.Minute
			env.ExecuteWorkflow(AgentWorkflowName, in)

			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var final InvocationPayload
			require.NoError(t, env.GetWorkflowResult(&final))
			assert.Equal(t, AgentSucceeded, final.Status, "it ends as its CLI did")
			assert.InDelta(t, (exit + tc.ends).Milliseconds(), final.ElapsedMs, 2000)
			if tc.ask {
				assert.True(t, asked.answer.Answerable)
				require.True(t, plain.done)
				assert.Equal(t, AgentReasonFinished, plain.answer.Reason, "a plain wait sees the CLI's end while it holds")
			}
			if tc.decline {
				require.True(t, declined.done, "%v", declined.refused)
				assert.False(t, declined.answer.Answerable)
			}
		})
	}
}
