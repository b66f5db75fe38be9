package workflows

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"

	commonpb "go.temporal.io/api/common/v1"
)

// pendingActivity is a pending activity as Temporal describes it, with
// details as its last heartbeat (none when nil).
func pendingActivity(t *testing.T, name string, details any) *workflowpb.PendingActivityInfo {
	pa := &workflowpb.PendingActivityInfo{ActivityType: &commonpb.ActivityType{Name: name}}
	if details != nil {
		payloads, err := converter.GetDefaultDataConverter().ToPayloads(details)
		require.NoError(t, err)
		pa.HeartbeatDetails = payloads
	}
	return pa
}

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
		Blockers: []string{BlockerPermission},
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
		pending []*workflowpb.PendingActivityInfo
		want    InvocationPayload
	}{{
		name:    "the heartbeat's session, reply and activity, aged",
		payload: running,
		pending: []*workflowpb.PendingActivityInfo{pendingActivity(t, RunAgentActivityName, live.Heartbeat())},
		want: InvocationPayload{InvocationID: "agent/1", Status: AgentRunning, Reason: AgentReasonWaitElapsed, ElapsedMs: 10_000,
			SessionID: "s-1", Output: ptr("building…"), OutputAgeMs: ms(3000),
			Activity: &AgentActivity{Kind: "tool_call", State: "running", ToolName: "Bash", AgeMs: 500}},
	}, {
		name:    "a long reply is trimmed to its tail",
		payload: running,
		pending: []*workflowpb.PendingActivityInfo{pendingActivity(t, RunAgentActivityName, longLive.Heartbeat())},
		want: InvocationPayload{InvocationID: "agent/1", Status: AgentRunning, Reason: AgentReasonWaitElapsed, ElapsedMs: 10_000,
			Output: ptr(strings.Repeat("é", OutputTailChars)), OutputAgeMs: ms(1000)},
	}, {
		name:    "no reply or activity yet: only the session",
		payload: running,
		pending: []*workflowpb.PendingActivityInfo{pendingActivity(t, RunAgentActivityName, AgentLive{SessionID: "s-2"})},
		want:    InvocationPayload{InvocationID: "agent/1", Status: AgentRunning, Reason: AgentReasonWaitElapsed, ElapsedMs: 10_000, SessionID: "s-2"},
	}, {
		name:    "the RunAgent heartbeat among other pending activities",
		payload: running,
		pending: []*workflowpb.PendingActivityInfo{
			pendingActivity(t, ClaimAgentHostActivity, AgentLive{SessionID: "not this one"}),
			pendingActivity(t, RunAgentActivityName, AgentLive{SessionID: "s-3"}),
		},
		want: InvocationPayload{InvocationID: "agent/1", Status: AgentRunning, Reason: AgentReasonWaitElapsed, ElapsedMs: 10_000, SessionID: "s-3"},
	}, {
		name:    "no pending activity: as it is",
		payload: running,
		want:    running,
	}, {
		name:    "RunAgent has not heartbeated yet: as it is",
		payload: running,
		pending: []*workflowpb.PendingActivityInfo{pendingActivity(t, RunAgentActivityName, nil)},
		want:    running,
	}, {
		name:    "a heartbeat that does not decode: as it is",
		payload: running,
		pending: []*workflowpb.PendingActivityInfo{pendingActivity(t, RunAgentActivityName, "not an AgentLive")},
		want:    running,
	}, {
		name:    "a finished invocation keeps its whole final reply",
		payload: finished,
		pending: []*workflowpb.PendingActivityInfo{pendingActivity(t, RunAgentActivityName, live)},
		want:    finished,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, AssemblePayload(tc.payload, tc.pending, now))
		})
	}
}

func TestTheHeartbeatCarriesTheReplysTail(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	live := AgentLive{SessionID: "s", Reply: "ab" + strings.Repeat("д", OutputTailChars), ReplyAt: at, Blockers: []string{BlockerAuth}}
	beat := live.Heartbeat()
	assert.Equal(t, strings.Repeat("д", OutputTailChars), beat.Reply, "the last OutputTailChars characters")
	assert.Equal(t, AgentLive{SessionID: "s", Reply: beat.Reply, ReplyAt: at, Blockers: []string{BlockerAuth}}, beat, "the rest is kept")
	short := AgentLive{Reply: "done"}
	assert.Equal(t, short, short.Heartbeat())
}
