package workflows

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wait_agent takes one invocation_id, or invocation_ids with a mode; every
// broken rule names its field.
func TestParseWaitAgentNamesTheFieldOfEachBrokenRule(t *testing.T) {
	a, b := "agent/aaaa", "agent/bbbb"
	spec, err := ParseWaitAgent(json.RawMessage(`{"invocation_id":"` + a + `"}`))
	require.NoError(t, err)
	assert.Equal(t, WaitAgentSpec{IDs: []string{a}, Mode: FanInAny, Single: true}, spec)

	spec, err = ParseWaitAgent(json.RawMessage(`{"invocation_ids":["` + a + `","` + b + `"],"mode":"first_blocker"}`))
	require.NoError(t, err)
	assert.Equal(t, WaitAgentSpec{IDs: []string{a, b}, Mode: FanInFirstBlocker}, spec)
	spec, err = ParseWaitAgent(json.RawMessage(`{"invocation_ids":["` + a + `"]}`))
	require.NoError(t, err)
	assert.Equal(t, FanInAny, spec.Mode, "any by default")

	many := make([]string, MaxFanIn+1)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprintf("agent/%d", i))
	}
	for args, want := range map[string]string{
		`{}`: "invocation_id: is required",
		`{"invocation_id":"` + a + `","invocation_ids":["` + b + `"]}`: "invocation_ids: give invocation_id (one invocation) or invocation_ids (several), not both",
		`{"invocation_id":"` + a + `","mode":"all"}`:                   "mode: applies to invocation_ids only",
		`{"invocation_ids":"` + a + `"}`:                               "invocation_ids: must be an array of invocation IDs returned by start_agent (got a string)",
		`{"invocation_ids":[]}`:                                        "invocation_ids: must name at least one invocation",
		`{"invocation_ids":[` + strings.Join(many, ",") + `]}`:         fmt.Sprintf("invocation_ids: must be at most %d invocations (got %d)", MaxFanIn, MaxFanIn+1),
		`{"invocation_ids":["` + a + `","x/1"]}`:                       `invocation_ids[1]: "x/1" is not an invocation ID returned by start_agent`,
		`{"invocation_ids":["` + a + `",7]}`:                           "invocation_ids[1]: must be a string (got a number)",
		`{"invocation_ids":["` + a + `","` + a + `"]}`:                 `invocation_ids[1]: repeats invocation_ids[0] ("agent/aaaa")`,
		`{"invocation_ids":["` + a + `"],"mode":"first"}`:              `mode: must be any, all or first_blocker (got "first")`,
		`{"invocation_ids":["` + a + `"],"wait":1}`:                    "wait: unknown field (allowed here: invocation_id, invocation_ids, mode)",
	} {
		_, err := ParseWaitAgent(json.RawMessage(args))
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), want, args)
	}
}

// Each mode is met by the answers it names, and says which invocation
// decided it.
func TestFanInModesAreMetByTheAnswersTheyName(t *testing.T) {
	running := InvocationPayload{Status: AgentRunning, Reason: AgentReasonWaitElapsed}
	done := InvocationPayload{Status: AgentSucceeded, Reason: AgentReasonFinished}
	blocked := InvocationPayload{Status: AgentRunning, Reason: AgentReasonExecutionBlocked}
	type step struct {
		index   int
		payload InvocationPayload
	}
	run := func(mode FanInMode, steps ...step) (int, bool, int) {
		payloads, answered := make([]InvocationPayload, 3), make([]bool, 3)
		for n, s := range steps {
			payloads[s.index], answered[s.index] = s.payload, true
			if d, met := FanInMet(mode, payloads, answered, s.index); met {
				return d, true, n
			}
		}
		return -1, false, len(steps)
	}
	d, met, at := run(FanInAny, step{1, running}, step{2, done})
	assert.True(t, met)
	assert.Equal(t, 2, d, "any: the first that finished, not a window's end")
	assert.Equal(t, 1, at)

	d, met, _ = run(FanInAll, step{0, done}, step{2, blocked}, step{1, done})
	assert.True(t, met)
	assert.Equal(t, 1, d, "all: the last to answer")
	_, met, _ = run(FanInAll, step{0, done}, step{2, done}, step{1, running})
	assert.False(t, met, "all: one still running at its window's end")

	d, met, at = run(FanInFirstBlocker, step{0, done}, step{2, blocked}, step{1, done})
	assert.True(t, met)
	assert.Equal(t, 2, d, "first_blocker: the blocker")
	assert.Equal(t, 1, at)
	d, met, _ = run(FanInFirstBlocker, step{0, done}, step{2, done}, step{1, done})
	assert.True(t, met)
	assert.Equal(t, 1, d, "first_blocker: all finished without one")
	endedBlocked := InvocationPayload{Status: AgentBlocked, Reason: AgentReasonFinished}
	d, met, at = run(FanInFirstBlocker, step{0, done}, step{1, endedBlocked}, step{2, done})
	assert.True(t, met)
	assert.Equal(t, 1, d, "first_blocker: a run that ended on a blocker is one")
	assert.Equal(t, 1, at)
}
