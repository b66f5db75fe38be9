package workflows

import (
	"encoding/json"
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

	p.RecordAttempt(s.Deadline)
	later := s.Deadline.Add(20 * time.Second)
	at, ok = s.NextAttemptAt(p, later)
	require.True(t, ok, "a call on the bound that never answered (its worker was lost) is made again")
	assert.Equal(t, later, at)

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

// An input recorded by an earlier version carries the schedule besides the
// spec and the start; it decodes, and derives the same schedule it carried.
func TestPollInputOfAnEarlierVersionDecodes(t *testing.T) {
	recorded := `{"spec":{"probe":{"tool":"k8s.kubectl_get","args":{}},"until":{"kind":"quiet_for_sec","quiet_for_sec":30},` +
		`"poll_sec":2,"max_wait_sec":300},"started_at":"2026-11-29T12:00:00Z","deadline":"2026-11-29T12:05:00Z",` +
		`"poll":2000000000,"quiet_for":30000000000}`
	var in PollInput
	require.NoError(t, json.Unmarshal([]byte(recorded), &in))
	s := in.Schedule()
	assert.Equal(t, t0, s.Start)
	assert.Equal(t, time.Date(2026, 11, 29, 12, 5, 0, 0, time.UTC), s.Deadline)
	assert.Equal(t, 2*time.Second, s.Poll)
	assert.Equal(t, 30*time.Second, in.Spec.QuietFor())
}
