package agentstream

import (
	"fmt"
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
}

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
	if b := ev.Blocker; b != nil {
		for _, seen := range s.Blockers {
			if seen.Code == b.Code {
				return nil
			}
		}
		s.Blockers = append(s.Blockers, *b)
		return b
	}
	return nil
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
	case len(s.Blockers) > 0:
		b := s.Blockers[len(s.Blockers)-1]
		out.Status, out.Error = workflows.AgentBlocked, &b
	case s.Final != nil && s.Final.Error != nil:
		out.Status, out.Error = workflows.AgentFailed, s.Final.Error
	default:
		out.Status = workflows.AgentFailed
		out.Error = &workflows.AgentError{Code: workflows.ErrCodeExitStatus, Message: fmt.Sprintf("the CLI exited with status %d", exitCode)}
	}
	return out
}

func isBlockerCode(code string) bool {
	switch code {
	case workflows.BlockerPermission, workflows.BlockerQuestion, workflows.BlockerAuth,
		workflows.BlockerRateLimit, workflows.BlockerBilling:
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
