package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func matcher(t *testing.T, u Until, quiet time.Duration) *Matcher {
	t.Helper()
	m, err := NewMatcher(WaitForSpec{Until: u}, quiet)
	require.NoError(t, err)
	return m
}

func observe(p *PollProgress, obs string, at time.Time) PollProgress {
	p.RecordAttempt(at)
	p.RecordObservation(obs, at)
	return *p
}

func TestJudgeMatches(t *testing.T) {
	m := matcher(t, Until{Kind: ConditionMatches, Pattern: `phase: Running`}, 0)
	var p PollProgress
	_, _, done := judge(m, p, t0)
	assert.False(t, done, "no observation yet")
	_, _, done = judge(m, observe(&p, "phase: Pending", t0), t0)
	assert.False(t, done)
	reason, cond, done := judge(m, observe(&p, "phase: Running", t0.Add(time.Second)), t0.Add(time.Second))
	assert.True(t, done)
	assert.Equal(t, WaitReasonMatched, reason)
	assert.Equal(t, ConditionMatches, cond)
}

func TestJudgeNotMatches(t *testing.T) {
	m := matcher(t, Until{Kind: ConditionNotMatches, Pattern: `Terminating`}, 0)
	var p PollProgress
	_, _, done := judge(m, observe(&p, "pod-a Terminating", t0), t0)
	assert.False(t, done)
	reason, cond, done := judge(m, observe(&p, "", t0.Add(time.Second)), t0.Add(time.Second))
	assert.True(t, done)
	assert.Equal(t, WaitReasonMatched, reason)
	assert.Equal(t, ConditionNotMatches, cond)
}

func TestJudgeQuietCountsFromTheFirstIdenticalSample(t *testing.T) {
	m := matcher(t, Until{Kind: ConditionQuietForSec, QuietForSec: 5}, 5*time.Second)
	var p PollProgress
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, step := range []struct {
		sec  int
		obs  string
		done bool
	}{
		{0, "a", false},
		{2, "a", false},
		{4, "b", false}, // changed: the window restarts here
		{6, "b", false},
		{8, "b", false},
		{9, "b", true}, // 5 s of "b"
	} {
		_, _, done := judge(m, observe(&p, step.obs, at(step.sec)), at(step.sec))
		assert.Equal(t, step.done, done, "at %ds", step.sec)
	}
	reason, cond, _ := judge(m, p, at(9))
	assert.Equal(t, WaitReasonSettled, reason)
	assert.Equal(t, ConditionQuietForSec, cond)
	assert.Equal(t, at(4), p.QuietSince)
}

func TestJudgeFailWinsOverSuccess(t *testing.T) {
	m := matcher(t, Until{Kind: ConditionMatches, Pattern: `Running`, FailPattern: `CrashLoopBackOff`}, 0)
	var p PollProgress
	reason, cond, done := judge(m, observe(&p, "Running CrashLoopBackOff", t0), t0)
	assert.True(t, done)
	assert.Equal(t, WaitReasonFailed, reason)
	assert.Equal(t, ConditionFailMatches, cond)
}

func TestRecordUnavailableKeepsTheLastObservation(t *testing.T) {
	var p PollProgress
	observe(&p, "ok", t0)
	p.RecordAttempt(t0.Add(time.Second))
	p.RecordUnavailable(assert.AnError)
	assert.Equal(t, 1, p.Samples)
	assert.Equal(t, 2, p.Attempts)
	assert.Equal(t, "ok", p.LastObservation)
	assert.Equal(t, assert.AnError.Error(), p.LastError)

	res := p.Result(WaitForSpec{MaxWaitSec: 30}, WaitReasonTimeout, "", 30*time.Second+1234*time.Millisecond)
	assert.Equal(t, WaitForResult{
		Reason: WaitReasonTimeout, LastObservation: "ok", ElapsedSec: 31.234, Samples: 1,
		EffectiveMaxWaitSec: 30, ProbeError: assert.AnError.Error(),
	}, res)

	observe(&p, "ok", t0.Add(2*time.Second))
	assert.Empty(t, p.LastError, "a successful sample clears the error")
}

// judge is m's verdict on p at now, with no deadline on the matches.
func judge(m *Matcher, p PollProgress, now time.Time) (WaitReason, ConditionKind, bool) {
	reason, cond, done, _ := m.JudgeContext(context.Background(), p, now)
	return reason, cond, done
}
