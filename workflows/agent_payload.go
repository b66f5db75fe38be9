package workflows

import "time"

// Tail is the live state as the run's host answers it: the reply cut to
// the tail a running payload carries (OutputTailChars). This is the one
// place the running reply is trimmed, and AssemblePayload passes the tail
// on as it is.
func (l AgentLive) Tail() AgentLive {
	l.Reply = Tail(l.Reply, OutputTailChars)
	return l
}

// AssemblePayload is a running payload p with what the CLI is doing now,
// as its host said (live): its session ID, the latest reply's tail and its
// activity, each aged at now. A payload of a finished invocation is
// returned as it is.
func AssemblePayload(p InvocationPayload, live AgentLive, now time.Time) InvocationPayload {
	if p.Status != AgentRunning {
		return p
	}
	p.SessionID = live.SessionID
	if live.Reply != "" {
		out := live.Reply
		age := max(0, now.Sub(live.ReplyAt).Milliseconds())
		p.Output, p.OutputAgeMs = &out, &age
	}
	if live.Activity != nil {
		a := *live.Activity
		a.AgeMs = max(0, now.Sub(live.ActivityAt).Milliseconds())
		p.Activity = &a
	}
	return p
}
