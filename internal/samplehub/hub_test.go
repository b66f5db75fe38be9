package samplehub

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/workflows"
)

func TestEventsReachTheSubscribersOfTheirWorkflow(t *testing.T) {
	h := New()
	a1, stopA1 := h.Subscribe("wait_for/a")
	a2, stopA2 := h.Subscribe("wait_for/a")
	b, stopB := h.Subscribe("wait_for/b")
	defer stopA2()
	defer stopB()

	h.Observe("wait_for/a", workflows.Sample{Number: 1, Observation: "x"})
	assert.Equal(t, workflows.Sample{Number: 1, Observation: "x"}, <-a1)
	assert.Equal(t, workflows.Sample{Number: 1, Observation: "x"}, <-a2)
	assert.Empty(t, b, "other workflows' events are not delivered")

	stopA1()
	_, open := <-a1
	assert.False(t, open, "unsubscribing closes the channel")
	stopA1() // idempotent
	h.Observe("wait_for/a", workflows.WaitForResult{Reason: workflows.WaitReasonMatched})
	assert.Equal(t, workflows.WaitForResult{Reason: workflows.WaitReasonMatched}, <-a2)
}

func TestASlowSubscriberNeverBlocksTheActivity(t *testing.T) {
	h := New()
	ch, stop := h.Subscribe("w")
	defer stop()
	for i := range subscriberBuffer * 3 {
		h.Observe("w", workflows.Sample{Number: i + 1})
	}
	require.Len(t, ch, subscriberBuffer)
	assert.Equal(t, workflows.Sample{Number: 1}, <-ch, "the oldest events are kept; later ones are dropped")
}
