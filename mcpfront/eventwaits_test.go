package mcpfront

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/durawait/durawait/workflows"
)

// An event is its poster's own unless a shared pattern names it; the
// latch starts with the front's retention.
func TestLatchOfScopesEventsByPrincipalUnlessShared(t *testing.T) {
	f := &Front{opts: Options{EventOptions: EventOptions{Retention: time.Minute, Shared: []string{"team-*", "release.?"}}}}
	own := f.latchOf("alice", "ci-done")
	assert.Equal(t, workflows.EventLatchID("alice", "ci-done", false), own.ID)
	assert.Equal(t, "alice", own.Start.Caller)
	assert.Equal(t, time.Minute, own.Start.Retention)
	assert.NotEqual(t, own.ID, f.latchOf("bob", "ci-done").ID)
	assert.Equal(t, "anonymous", f.latchOf("", "ci-done").Start.Caller)

	shared := f.latchOf("alice", "team-release")
	assert.Equal(t, "event/shared/team-release", shared.ID)
	assert.Equal(t, shared.ID, f.latchOf("bob", "team-release").ID)
	assert.Equal(t, workflows.SharedEventTag, shared.Start.Caller)
	assert.Equal(t, "event/shared/release.1", f.latchOf("", "release.1").ID)
	assert.NotEqual(t, "event/shared/release.10", f.latchOf("", "release.10").ID, "? is one character")

	assert.Equal(t, workflows.DefaultEventRetention, (&Front{}).latchOf("", "x").Start.Retention)
}

// A wait_for_event's and a post_event's span attributes and outcome come
// from their answers.
func TestEventResultAttributes(t *testing.T) {
	attrs, outcome := eventWaitResultAttributes(workflows.EventWaitResult{Reason: workflows.EventReasonPosted, Name: "x", ElapsedSec: 1.5,
		Event: &workflows.EventPost{Seq: 3}})
	assert.Equal(t, "posted", outcome)
	assert.Contains(t, attrs, attrEventSeq.Int64(3))
	assert.Contains(t, attrs, attrElapsedMs.Int64(1500))
	_, outcome = eventWaitResultAttributes(workflows.EventWaitResult{Reason: workflows.EventReasonTimeout, Name: "x"})
	assert.Equal(t, "timeout", outcome)

	attrs, outcome = postResultAttributes(PostAnswer{Name: "x", Seq: 2, Answered: 4})
	assert.Equal(t, "posted", outcome)
	assert.Contains(t, attrs, attrAnswered.Int(4))
	_, outcome = postResultAttributes(PostAnswer{Name: "x", Seq: 2, Duplicate: true})
	assert.Equal(t, "duplicate", outcome)
}
