package workflows

import (
	"time"

	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"
)

// Heartbeat is the live state as the RunAgent activity heartbeats it: the
// reply cut to the tail a running payload carries (OutputTailChars). This is
// the one place the running reply is trimmed; it keeps the heartbeat small,
// and AssemblePayload passes the tail on as it is.
func (l AgentLive) Heartbeat() AgentLive {
	l.Reply = Tail(l.Reply, OutputTailChars)
	return l
}

// AssemblePayload is wait_agent's answer from the pieces the front end
// fetched: p, the payload the wait update or the closed workflow returned,
// and pending, the invocation's pending activities as Temporal describes
// them. A running payload gets what the CLI is doing now from the RunAgent
// activity's last heartbeat (see AgentLive.Heartbeat): its session ID, the
// latest reply's tail and its activity, each aged at now. A payload of a
// finished invocation, or one without a readable heartbeat, is returned as
// it is.
func AssemblePayload(p InvocationPayload, pending []*workflowpb.PendingActivityInfo, now time.Time) InvocationPayload {
	if p.Status != AgentRunning {
		return p
	}
	live, ok := lastHeartbeat(pending)
	if !ok {
		return p
	}
	p.SessionID = live.SessionID
	if live.Reply != "" {
		out := live.Reply
		age := now.Sub(live.ReplyAt).Milliseconds()
		p.Output, p.OutputAgeMs = &out, &age
	}
	if live.Activity != nil {
		a := *live.Activity
		a.AgeMs = now.Sub(live.ActivityAt).Milliseconds()
		p.Activity = &a
	}
	return p
}

// lastHeartbeat decodes the RunAgent activity's last heartbeat among the
// pending activities; false when there is none or it does not decode.
func lastHeartbeat(pending []*workflowpb.PendingActivityInfo) (AgentLive, bool) {
	for _, pa := range pending {
		if pa.GetActivityType().GetName() != RunAgentActivityName || pa.GetHeartbeatDetails() == nil {
			continue
		}
		var live AgentLive
		if err := converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &live); err != nil {
			return AgentLive{}, false
		}
		return live, true
	}
	return AgentLive{}, false
}
