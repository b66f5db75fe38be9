package workflows

import (
	"context"
	"fmt"
	"io"
	"math"
	"regexp"
	"time"
	"unicode/utf8"
)

// WaitReason says why a wait_for stopped. The reasons of the agent tools
// are another type, AgentReason.
type WaitReason string

// The reasons of wait_for's output schema, plus "failed" for
// until.fail_matches.
const (
	WaitReasonMatched WaitReason = "matched"
	WaitReasonSettled WaitReason = "settled"
	WaitReasonTimeout WaitReason = "timeout"
	WaitReasonFailed  WaitReason = "failed"
)

// WaitForResult is what a finished wait_for returns. A timeout is a normal
// result, not an error.
type WaitForResult struct {
	Reason WaitReason `json:"reason"`
	// Condition names the condition that fired; empty on timeout.
	Condition       ConditionKind `json:"condition,omitempty"`
	LastObservation string        `json:"last_observation"`
	ElapsedSec      float64       `json:"elapsed_sec"`
	Samples         int           `json:"samples"`
	// EffectiveMaxWaitSec is max_wait_sec after clamping to the ceiling.
	EffectiveMaxWaitSec int `json:"effective_max_wait_sec"`
	// ProbeError is set when the last attempt to sample failed because the
	// downstream server was unavailable; the wait carried on regardless.
	ProbeError string `json:"probe_error,omitempty"`
}

// PollProgress is the state of a wait_for's probe loop as its host runs
// it. It lives in the host's memory: what a loop resumed on another host
// (or after a restart) needs of it, the last observation and the quiet
// window, the loop records as a ProbeRecord when it changes; the sample
// count is carried approximately (ResumeProgress).
type PollProgress struct {
	// Samples counts successful probe calls.
	Samples int `json:"samples"`
	// HasObservation is false until the first successful sample.
	HasObservation  bool   `json:"has_observation"`
	LastObservation string `json:"last_observation"`
	// QuietSince is when LastObservation was first seen unchanged.
	QuietSince time.Time `json:"quiet_since"`
	// Attempts counts probe calls, successful or not.
	Attempts int `json:"attempts"`
	// LastAttemptAt is when the most recent probe call started.
	LastAttemptAt time.Time `json:"last_attempt_at"`
	// LastError is the unavailability error of the most recent attempt, or
	// empty when it succeeded.
	LastError string `json:"last_error,omitempty"`
	// windowLost, in a loop resumed from a record with no quiet window,
	// says the next sample starts a new window even when it equals the
	// recorded observation (the samples between the record and the break
	// are unknown).
	windowLost bool
}

// ResumeProgress is the progress a loop resumed at now continues from:
// the recorded observation, with the samples estimated from the schedule
// (the samples a loop that had run without a break would have taken
// before now: the count a resumed wait reports is approximate), and the
// quiet window of record when it has one (none: the window starts again at
// the next sample, which settles later, never earlier). A record with no
// observation (the loop was lost before it recorded one) gives nothing:
// the resumed loop counts its own samples, so a wait that then observes
// nothing answers with no samples and no observation, as one whose
// downstream server was never reachable.
func ResumeProgress(s PollSchedule, record ProbeRecord, now time.Time) PollProgress {
	var p PollProgress
	if record.Observed {
		p.Samples = max(s.SamplesBefore(now), 1)
		p.HasObservation = true
		p.LastObservation = record.Observation
		p.QuietSince = record.QuietSince
		p.windowLost = record.QuietSince.IsZero()
	}
	return p
}

// sameObservation reports whether observation continues the quiet window
// of the last one.
func (p PollProgress) sameObservation(observation string) bool {
	return p.HasObservation && !p.windowLost && observation == p.LastObservation
}

// RecordAttempt notes that a probe call started at at.
func (p *PollProgress) RecordAttempt(at time.Time) {
	p.Attempts++
	p.LastAttemptAt = at
}

// RecordObservation notes a successful sample taken at at.
func (p *PollProgress) RecordObservation(observation string, at time.Time) {
	if !p.sameObservation(observation) {
		p.QuietSince = at
	}
	p.Samples++
	p.HasObservation = true
	p.LastObservation = observation
	p.windowLost = false
	p.LastError = ""
}

// RecordUnavailable notes an attempt that failed because the probe's server
// could not be reached.
func (p *PollProgress) RecordUnavailable(err error) {
	p.LastError = err.Error()
}

// Result builds the wait's result from the progress so far.
func (p PollProgress) Result(spec WaitForSpec, reason WaitReason, cond ConditionKind, elapsed time.Duration) WaitForResult {
	return WaitForResult{
		Reason:              reason,
		Condition:           cond,
		LastObservation:     p.LastObservation,
		ElapsedSec:          math.Round(elapsed.Seconds()*1000) / 1000,
		Samples:             p.Samples,
		EffectiveMaxWaitSec: spec.MaxWaitSec,
		ProbeError:          p.LastError,
	}
}

// Matcher decides, sample by sample, whether a wait_for's condition holds.
type Matcher struct {
	kind     ConditionKind
	success  *regexp.Regexp
	fail     *regexp.Regexp
	quietFor time.Duration
}

// NewMatcher compiles a spec's patterns; quietFor is the quiet window of a
// quiet_for_sec condition. The parser has already compiled the patterns once,
// so an error here means the spec did not come from ParseWaitFor.
func NewMatcher(spec WaitForSpec, quietFor time.Duration) (*Matcher, error) {
	m := &Matcher{kind: spec.Until.Kind, quietFor: quietFor}
	var err error
	if spec.Until.Pattern != "" {
		if m.success, err = regexp.Compile(spec.Until.Pattern); err != nil {
			return nil, fmt.Errorf("compile until.%s: %w", spec.Until.Kind, err)
		}
	}
	if spec.Until.FailPattern != "" {
		if m.fail, err = regexp.Compile(spec.Until.FailPattern); err != nil {
			return nil, fmt.Errorf("compile until.fail_matches: %w", err)
		}
	}
	return m, nil
}

// JudgeContext says whether the wait is over after the latest observation
// in p, taken at now. The failure pattern is checked first: when an output
// matches both, the wait fails. Its matches stop when ctx ends: then it
// returns ctx's error and no verdict. A pattern's cost grows with its
// compiled program as well as with the text, so a match over a large output
// can take seconds; this lets the caller give up on it at a deadline
// without leaving it burning CPU.
func (m *Matcher) JudgeContext(ctx context.Context, p PollProgress, now time.Time) (WaitReason, ConditionKind, bool, error) {
	if !p.HasObservation {
		return "", "", false, nil
	}
	obs := p.LastObservation
	if m.fail != nil {
		hit, err := matchContext(ctx, m.fail, obs)
		if err != nil {
			return "", "", false, err
		}
		if hit {
			return WaitReasonFailed, ConditionFailMatches, true, nil
		}
	}
	switch m.kind {
	case ConditionMatches, ConditionNotMatches:
		hit, err := matchContext(ctx, m.success, obs)
		if err != nil {
			return "", "", false, err
		}
		if hit == (m.kind == ConditionMatches) {
			return WaitReasonMatched, m.kind, true, nil
		}
	case ConditionQuietForSec:
		if now.Sub(p.QuietSince) >= m.quietFor {
			return WaitReasonSettled, ConditionQuietForSec, true, nil
		}
	}
	return "", "", false, nil
}

// cheapMatchBytes is the text size below which a match runs on the string
// directly (fast, with literal-prefix scans); above it, the match reads the
// text through a reader that stops when the context ends (a few milliseconds
// over 256 KiB for ordinary patterns).
const cheapMatchBytes = 4 * 1024

// matchContext reports whether re matches s, giving up when ctx ends.
func matchContext(ctx context.Context, re *regexp.Regexp, s string) (bool, error) {
	if _, literal := re.LiteralPrefix(); literal || len(s) <= cheapMatchBytes {
		// A pure literal is a substring search: fast whatever its length.
		return re.MatchString(s), nil
	}
	r := &stoppableReader{s: s, done: ctx.Done()}
	hit := re.MatchReader(r)
	if r.stopped {
		return false, ctx.Err()
	}
	return hit, nil
}

// stoppableReader reads a string rune by rune and reports the end of the
// text early once done is closed. It looks at done every stopCheckRunes runes.
type stoppableReader struct {
	s       string
	pos     int
	n       int
	done    <-chan struct{}
	stopped bool
}

const stopCheckRunes = 1024

func (r *stoppableReader) ReadRune() (rune, int, error) {
	if r.stopped || r.pos >= len(r.s) {
		return 0, 0, io.EOF
	}
	r.n++
	if r.n%stopCheckRunes == 0 {
		select {
		case <-r.done:
			r.stopped = true
			return 0, 0, io.EOF
		default:
		}
	}
	c, size := utf8.DecodeRuneInString(r.s[r.pos:])
	r.pos += size
	return c, size, nil
}

// Sample is one probe observation, as reported to progress listeners.
type Sample struct {
	// Number counts samples from 1.
	Number int
	// Expected is how many samples the wait takes if it runs to its bound.
	Expected    int
	Observation string
}
