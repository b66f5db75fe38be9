package agentstream

import (
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/durawait/durawait/workflows"
)

// State folds a run's events: what is known now, and how the run ended once
// the CLI has exited.
type State struct {
	Live     workflows.AgentLive
	Final    *Final
	Blockers []workflows.AgentError
	// firstRetry and lastRetry are when the CLI began retrying its API
	// (or waiting for the network), with nothing else said since, and
	// when it last did; zero when it is not retrying.
	firstRetry, lastRetry time.Time
	// gotThrough is true once the CLI said something else after the
	// network blocker: the blocker is no longer why the run ends.
	gotThrough bool
}

// RetryKinds are the activities of a CLI that retries its model's API or
// waits for the network: Claude Code's api_retry, Codex's reconnecting,
// Gemini CLI's retries.
var RetryKinds = []string{"api_retry", "reconnecting"}

// Apply folds ev, seen at at, into the state. It returns the blocker when ev
// brings a category not seen before in this run, so it can wake a wait once.
func (s *State) Apply(ev Event, at time.Time) *workflows.AgentError {
	if ev.SessionID != "" {
		s.Live.SessionID = ev.SessionID
	}
	if ev.Reply != "" {
		s.Live.Reply = ev.Reply
		s.Live.ReplyAt = at
	}
	if ev.Activity != nil {
		s.Live.Activity = ev.Activity
		s.Live.ActivityAt = at
	}
	if ev.Final != nil {
		s.Final = ev.Final
	}
	switch {
	case ev.Activity != nil && slices.Contains(RetryKinds, ev.Activity.Kind):
		if s.firstRetry.IsZero() {
			s.firstRetry = at
		}
		s.lastRetry = at
	case ev.Reply != "" || ev.Activity != nil || ev.Final != nil || ev.Blocker != nil:
		// It got through.
		s.firstRetry, s.lastRetry = time.Time{}, time.Time{}
		s.gotThrough = s.has(workflows.BlockerNetwork)
	}
	if b := ev.Blocker; b != nil {
		return s.block(*b)
	}
	return nil
}

// block records blocker b and returns it when its category is new to the
// run; nil when the run had it already.
func (s *State) block(b workflows.AgentError) *workflows.AgentError {
	for _, seen := range s.Blockers {
		if seen.Code == b.Code {
			return nil
		}
	}
	s.Blockers = append(s.Blockers, b)
	return &b
}

// has reports whether the run had a blocker of category code.
func (s *State) has(code string) bool {
	for _, b := range s.Blockers {
		if b.Code == code {
			return true
		}
	}
	return false
}

// Unreachable returns the network_unavailable blocker once the CLI's
// retries of its API (or reconnects), with nothing else said in between,
// have kept coming for after (0: never), at most once per run; nil
// otherwise. Silence after a retry is not counted: a CLI whose retry got
// through may think for minutes without a word.
func (s *State) Unreachable(now time.Time, after time.Duration) *workflows.AgentError {
	if after <= 0 || s.firstRetry.IsZero() || s.lastRetry.Sub(s.firstRetry) < after {
		return nil
	}
	msg := fmt.Sprintf("the CLI has not reached its model's API for %s: it retries or waits for the network", s.lastRetry.Sub(s.firstRetry).Round(time.Second))
	if a := s.Live.Activity; a != nil && a.State != "" {
		msg += " (last: " + a.Kind + ", " + a.State + ")"
	}
	return s.block(workflows.AgentError{Code: workflows.BlockerNetwork, Message: msg})
}

// Outcome says how the run ended, given the CLI's exit code. A run that
// exits with an error after a blocker ended because of it: status blocked,
// error.code naming the category.
func (s *State) Outcome(exitCode int) workflows.AgentFinal {
	out := workflows.AgentFinal{Output: s.Live.Reply, SessionID: s.Live.SessionID}
	dropped := 0
	if s.Final != nil && s.Final.Output != "" {
		out.Output, dropped = s.Final.Output, s.Final.Dropped
	}
	out.Output = keepEnd(out.Output, dropped)
	failed := exitCode != 0 || (s.Final != nil && s.Final.IsError)
	switch {
	case !failed:
		out.Status = workflows.AgentSucceeded
	case s.Final != nil && s.Final.Error != nil && isBlockerCode(s.Final.Error.Code):
		out.Status, out.Error = workflows.AgentBlocked, s.Final.Error
	case len(s.endingBlockers()) > 0:
		blockers := s.endingBlockers()
		b := blockers[len(blockers)-1]
		out.Status, out.Error = workflows.AgentBlocked, &b
	case s.Final != nil && s.Final.Error != nil:
		out.Status, out.Error = workflows.AgentFailed, s.Final.Error
	default:
		out.Status = workflows.AgentFailed
		out.Error = &workflows.AgentError{Code: workflows.ErrCodeExitStatus, Message: fmt.Sprintf("the CLI exited with status %d", exitCode)}
	}
	return out
}

// endingBlockers are the blockers a failed exit is blamed on: all but a
// network blocker the CLI got past.
func (s *State) endingBlockers() []workflows.AgentError {
	if !s.gotThrough {
		return s.Blockers
	}
	var out []workflows.AgentError
	for _, b := range s.Blockers {
		if b.Code != workflows.BlockerNetwork {
			out = append(out, b)
		}
	}
	return out
}

func isBlockerCode(code string) bool {
	switch code {
	case workflows.BlockerPermission, workflows.BlockerQuestion, workflows.BlockerAuth,
		workflows.BlockerRateLimit, workflows.BlockerBilling, workflows.BlockerNetwork:
		return true
	}
	return false
}

// MaxFinalOutputBytes bounds the final reply a payload carries; a longer one
// keeps its end, which is where a CLI's conclusion is.
const MaxFinalOutputBytes = 256 * 1024

// keepEnd caps s at MaxFinalOutputBytes, keeping its end, and says how many
// bytes were cut, counting the dropped bytes already cut before s.
func keepEnd(s string, dropped int) string {
	if len(s) > MaxFinalOutputBytes {
		cut := len(s) - MaxFinalOutputBytes
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		s, dropped = s[cut:], dropped+cut
	}
	if dropped == 0 {
		return s
	}
	return fmt.Sprintf("[%d bytes cut]\n", dropped) + s
}
