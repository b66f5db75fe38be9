package workflows

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAssemblePayloadMergesTheLiveStateIntoARunningPayload(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 10, 0, time.UTC)
	running := InvocationPayload{InvocationID: "agent/1", Status: AgentRunning, Reason: AgentReasonWaitElapsed, ElapsedMs: 10_000}
	finalOut := strings.Repeat("x", 2*OutputTailChars)
	finished := InvocationPayload{InvocationID: "agent/1", Status: AgentSucceeded, Reason: AgentReasonFinished, ElapsedMs: 12_000, Output: &finalOut}
	bash := &AgentActivity{Kind: "tool_call", State: "running", ToolName: "Bash"}
	live := AgentLive{
		SessionID: "s-1",
		Reply:     "building…", ReplyAt: now.Add(-3 * time.Second),
		Activity: bash, ActivityAt: now.Add(-500 * time.Millisecond),
	}
	// A long reply: its tail is the last OutputTailChars characters (not
	// bytes) of it.
	long := "start " + strings.Repeat("é", OutputTailChars)
	longLive := AgentLive{Reply: long, ReplyAt: now.Add(-time.Second)}

	ptr := func(s string) *string { return &s }
	ms := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name    string
		payload InvocationPayload
		live    AgentLive
		want    InvocationPayload
	}{{
		name:    "the host's session, reply and activity, aged",
		payload: running,
		live:    live.Tail(),
		want: InvocationPayload{InvocationID: "agent/1", Status: AgentRunning, Reason: AgentReasonWaitElapsed, ElapsedMs: 10_000,
			SessionID: "s-1", Output: ptr("building…"), OutputAgeMs: ms(3000),
			Activity: &AgentActivity{Kind: "tool_call", State: "running", ToolName: "Bash", AgeMs: 500}},
	}, {
		name:    "a long reply is trimmed to its tail",
		payload: running,
		live:    longLive.Tail(),
		want: InvocationPayload{InvocationID: "agent/1", Status: AgentRunning, Reason: AgentReasonWaitElapsed, ElapsedMs: 10_000,
			Output: ptr(strings.Repeat("é", OutputTailChars)), OutputAgeMs: ms(1000)},
	}, {
		name:    "no reply or activity yet: only the session",
		payload: running,
		live:    AgentLive{SessionID: "s-2"},
		want:    InvocationPayload{InvocationID: "agent/1", Status: AgentRunning, Reason: AgentReasonWaitElapsed, ElapsedMs: 10_000, SessionID: "s-2"},
	}, {
		name:    "a finished invocation keeps its whole final reply",
		payload: finished,
		live:    live,
		want:    finished,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, AssemblePayload(tc.payload, tc.live, now))
		})
	}
}

func TestTheLiveStateCarriesTheReplysTail(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	live := AgentLive{SessionID: "s", Reply: "ab" + strings.Repeat("д", OutputTailChars), ReplyAt: at}
	tail := live.Tail()
	assert.Equal(t, strings.Repeat("д", OutputTailChars), tail.Reply, "the last OutputTailChars characters")
	assert.Equal(t, AgentLive{SessionID: "s", Reply: tail.Reply, ReplyAt: at}, tail, "the rest is kept")
	short := AgentLive{Reply: "done"}
	assert.Equal(t, short, short.Tail())
}
