package samplehub

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/workflows"
)

func TestSamplesReachTheSubscribersOfTheirWorkflow(t *testing.T) {
	h := New()
	a1, stopA1 := h.Subscribe("wait_for/a")
	a2, stopA2 := h.Subscribe("wait_for/a")
	b, stopB := h.Subscribe("wait_for/b")
	defer stopA2()
	defer stopB()

	h.ObserveSample("wait_for/a", workflows.Sample{Number: 1, Observation: "x"})
	assert.Equal(t, 1, (<-a1).Number)
	assert.Equal(t, 1, (<-a2).Number)
	assert.Empty(t, b, "other workflows' samples are not delivered")

	stopA1()
	_, open := <-a1
	assert.False(t, open, "unsubscribing closes the channel")
	stopA1() // idempotent
	h.ObserveSample("wait_for/a", workflows.Sample{Number: 2})
	assert.Equal(t, 2, (<-a2).Number)
}

func TestASlowSubscriberNeverBlocksTheProbeLoop(t *testing.T) {
	h := New()
	ch, stop := h.Subscribe("w")
	defer stop()
	for i := range subscriberBuffer * 3 {
		h.ObserveSample("w", workflows.Sample{Number: i + 1})
	}
	require.Len(t, ch, subscriberBuffer)
	assert.Equal(t, 1, (<-ch).Number, "the oldest samples are kept; later ones are dropped")
}
