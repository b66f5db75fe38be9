package workflows

import "time"

// PollSchedule is when a wait_for's probe loop samples: the first sample at
// once, then one every poll interval, the last interval trimmed so that one
// sample lands exactly on the bound. It is derived from the spec and the time
// the wait began (NewPollSchedule), never carried separately, so the
// workflow, the activity and a retried activity all see the same schedule.
type PollSchedule struct {
	// Start is when the wait began; elapsed time counts from here, across
	// retries and restarts.
	Start time.Time
	// Deadline is Start plus the spec's bound (max_wait_sec).
	Deadline time.Time
	// Poll is the interval between samples (poll_sec).
	Poll time.Duration
}

// NewPollSchedule derives the schedule of a wait with this spec that began
// at start.
func NewPollSchedule(spec WaitForSpec, start time.Time) PollSchedule {
	return PollSchedule{Start: start, Deadline: start.Add(spec.MaxWait()), Poll: spec.Poll()}
}

// NextAttemptAt returns when the next probe call is due after the attempts
// recorded in p: now for the first, then every poll after the previous
// attempt, trimmed to the deadline. ok is false once a call made at (or
// after) the deadline has answered: the wait is over.
func (s PollSchedule) NextAttemptAt(p PollProgress, now time.Time) (at time.Time, ok bool) {
	if p.Attempts == 0 {
		return now, true
	}
	if !p.LastAttemptAt.Before(s.Deadline) {
		return time.Time{}, false
	}
	next := p.LastAttemptAt.Add(s.Poll)
	if next.After(s.Deadline) {
		next = s.Deadline
	}
	return next, true
}

// LatestDue is the attempt a loop that wakes at now for the attempt planned
// at takes: the latest time on at's grid (at, at + poll, ...) that is due
// by now, or the deadline once now reaches it. A loop that wakes late —
// its worker was busy, or it resumed after a crash — takes one sample for
// the intervals it missed, not one per interval back to back, and stays
// on its grid.
func (s PollSchedule) LatestDue(at, now time.Time) time.Time {
	if s.Poll <= 0 || now.Sub(at) < s.Poll {
		return at
	}
	if !now.Before(s.Deadline) {
		return s.Deadline
	}
	return at.Add(now.Sub(at) / s.Poll * s.Poll)
}

// ExpectedSamples is how many samples the wait takes when it runs to its
// bound: one at once, one per interval, one on the bound.
func (s PollSchedule) ExpectedSamples() int {
	maxWait := s.Deadline.Sub(s.Start)
	if s.Poll <= 0 {
		return 1
	}
	n := int(maxWait / s.Poll)
	if maxWait%s.Poll != 0 {
		n++
	}
	return n + 1
}

// SamplesBefore is how many samples a loop that ran without a break took
// before the latest sampling time due by now: one at the start and one
// per poll, before the deadline. A loop resumed at now counts them as
// taken (ResumeProgress) and takes the sample due now itself, so a wait
// resumed after a restart reports as many samples as its schedule takes.
func (s PollSchedule) SamplesBefore(now time.Time) int {
	if !now.After(s.Start) {
		return 0
	}
	if !now.Before(s.Deadline) {
		return s.ExpectedSamples() - 1 // all but the one on the bound
	}
	if s.Poll <= 0 {
		return 1
	}
	return int(now.Sub(s.Start) / s.Poll)
}
