package workflows

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func scheduleOf(pollSec, maxWaitSec int) PollSchedule {
	return NewPollSchedule(WaitForSpec{PollSec: pollSec, MaxWaitSec: maxWaitSec}, t0)
}

func TestNextAttemptAtTrimsTheLastIntervalOntoTheBound(t *testing.T) {
	s := scheduleOf(3, 10)
	var p PollProgress

	var got []time.Duration
	now := t0.Add(time.Millisecond) // the first sample is taken at once, whenever that is
	for {
		at, ok := s.NextAttemptAt(p, now)
		if !ok {
			break
		}
		got = append(got, at.Sub(t0))
		p.RecordAttempt(at)
		p.RecordObservation("pending", at)
		now = at
		require.Less(t, len(got), 10, "the schedule must end")
	}
	assert.Equal(t, []time.Duration{time.Millisecond, 3001 * time.Millisecond, 6001 * time.Millisecond, 9001 * time.Millisecond, 10 * time.Second}, got)
}

func TestNextAttemptAtAfterALateAttempt(t *testing.T) {
	s := scheduleOf(2, 10)
	p := PollProgress{Attempts: 1, LastAttemptAt: t0.Add(9500 * time.Millisecond)}
	at, ok := s.NextAttemptAt(p, t0.Add(9600*time.Millisecond))
	require.True(t, ok)
	assert.Equal(t, s.Deadline, at)

	later := s.Deadline.Add(20 * time.Second)
	p.RecordAttempt(s.Deadline)
	p.RecordObservation("pending", s.Deadline)
	_, ok = s.NextAttemptAt(p, later)
	assert.False(t, ok, "a sample on the bound is the last")
	p.RecordAttempt(s.Deadline)
	p.RecordUnavailable(errors.New("connection refused"))
	_, ok = s.NextAttemptAt(p, later)
	assert.False(t, ok, "and so is an attempt on the bound that found the server unavailable")
}

func TestALateLoopTakesOneSampleForTheIntervalsItMissed(t *testing.T) {
	s := scheduleOf(2, 10)
	planned := t0.Add(2 * time.Second)
	for _, tc := range []struct {
		name string
		now  time.Duration
		want time.Duration
	}{
		{"on time", 2 * time.Second, 2 * time.Second},
		{"late within the interval", 3900 * time.Millisecond, 2 * time.Second},
		{"one interval late", 4 * time.Second, 4 * time.Second},
		{"three and a half intervals late", 9 * time.Second, 8 * time.Second},
		{"past the deadline: the sample on the bound", 12 * time.Second, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, t0.Add(tc.want), s.LatestDue(planned, t0.Add(tc.now)))
		})
	}

	// After the late sample the next is one interval on, not at once.
	var p PollProgress
	p.RecordAttempt(s.LatestDue(planned, t0.Add(9*time.Second)))
	next, ok := s.NextAttemptAt(p, t0.Add(9*time.Second))
	require.True(t, ok)
	assert.Equal(t, s.Deadline, next)
}

func TestExpectedSamples(t *testing.T) {
	assert.Equal(t, 5, scheduleOf(3, 10).ExpectedSamples())
	assert.Equal(t, 61, scheduleOf(2, 120).ExpectedSamples())
	assert.Equal(t, 301, scheduleOf(1, 300).ExpectedSamples())
}

func TestPollScheduleIsDerivedFromTheSpecAndTheStart(t *testing.T) {
	spec := WaitForSpec{PollSec: 2, MaxWaitSec: 10}
	assert.Equal(t, PollSchedule{Start: t0, Deadline: t0.Add(10 * time.Second), Poll: 2 * time.Second},
		PollInput{Spec: spec, StartedAt: t0}.Schedule())
}

// A loop resumed at now counts the samples its schedule took before the
// sample due now, which it takes itself.
func TestSamplesBeforeCountsTheScheduleUpToTheSampleDueNow(t *testing.T) {
	s := scheduleOf(2, 10) // samples at 0, 2, 4, 6, 8, 10
	for _, tc := range []struct {
		at   float64
		want int
	}{{0, 0}, {0.5, 0}, {2, 1}, {2.5, 1}, {5, 2}, {9.9, 4}, {10, 5}, {40, 5}} {
		assert.Equal(t, tc.want, s.SamplesBefore(t0.Add(time.Duration(tc.at*float64(time.Second)))), "at %v s", tc.at)
	}
	assert.Equal(t, s.ExpectedSamples(), s.SamplesBefore(t0.Add(5*time.Second))+4, "resumed at 5 s: that sample, 7, 9 and 10 s")
}
