// Package agentstream reads the machine-readable output of agent CLIs (Claude
// Code stream-json, Codex exec --json, Gemini CLI stream-json, plain text)
// line by line into the few things durawait acts on: the session ID, the
// latest public reply, what the CLI is doing, execution blockers, and the
// CLI's own final verdict. An unknown or malformed line is ignored, never a
// crash.
package agentstream

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/durawait/durawait/workflows"
)

// Event is what one output line means; most lines set one field or none.
type Event struct {
	SessionID string
	// Reply is the latest public reply as a whole (not a delta).
	Reply    string
	Activity *workflows.AgentActivity
	Blocker  *workflows.AgentError
	Final    *Final
}

// Final is a CLI's own verdict on its run (Claude's result line, Codex's
// turn.completed / turn.failed, Gemini's result).
type Final struct {
	IsError bool
	// Output is the final reply when the CLI states it.
	Output string
	// Error classifies a failed run; nil when unknown.
	Error *workflows.AgentError
	// Dropped counts the bytes cut from the front of Output already.
	Dropped int
}

// Parser turns lines into events. Implementations keep the little state a
// format needs (deltas, tool names by ID) and are not safe for concurrent use.
type Parser interface {
	Parse(line []byte) []Event
}

// New returns a parser for format (one of workflows.AgentFormats). now is the clock used to judge how soon
// a rate limit resets.
func New(format string, now func() time.Time) (Parser, error) {
	switch format {
	case workflows.AgentFormatClaude:
		return &claudeParser{now: now, tools: map[string]string{}}, nil
	case workflows.AgentFormatCodex:
		return &codexParser{}, nil
	case workflows.AgentFormatGemini:
		return &geminiParser{tools: map[string]string{}}, nil
	case workflows.AgentFormatText:
		return &textParser{}, nil
	}
	return nil, fmt.Errorf("unknown output format %q (known: %s)", format, strings.Join(workflows.AgentFormats(), ", "))
}

// Finisher is a parser that has a verdict only once the CLI has exited.
type Finisher interface {
	Finish() *Final
}

// textParser treats the whole output as the reply; the exit status decides.
// It keeps the output's last MaxFinalOutputBytes, counting what it drops.
type textParser struct {
	out     []byte
	dropped int
	// started says a line was read: every later line starts with a newline,
	// even when the output so far is blank lines only.
	started bool
}

// runningReplyBytes is how much of the output's end a running reply carries:
// enough for the last OutputTailChars characters of any UTF-8.
const runningReplyBytes = 4 * workflows.OutputTailChars

func (p *textParser) Parse(line []byte) []Event {
	if p.started {
		p.out = append(p.out, '\n')
	}
	p.started = true
	p.out = append(p.out, line...)
	if over := len(p.out) - MaxFinalOutputBytes; over > 0 {
		for over < len(p.out) && !utf8.RuneStart(p.out[over]) {
			over++ // never keep half a character
		}
		p.dropped += over
		p.out = append(p.out[:0], p.out[over:]...)
	}
	return []Event{{Reply: string(p.out[max(0, len(p.out)-runningReplyBytes):])}}
}

// Finish returns the whole output as the final reply.
func (p *textParser) Finish() *Final {
	return &Final{Output: string(p.out), Dropped: p.dropped}
}

func blocker(code, message string) *workflows.AgentError {
	return &workflows.AgentError{Code: code, Message: message}
}

// Classify maps a CLI's error message to a blocker category, or "" when it
// is an ordinary failure. Only messages that end a turn are classified:
// transient retries are never blockers.
func Classify(msg string) string {
	m := strings.ToLower(msg)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(m, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("requested permission", "haven't granted", "have not granted", "denied by policy",
		"requires approval", "approval required", "permission denied by user"):
		return workflows.BlockerPermission
	case has("invalid api key", "authentication", "unauthorized", "401", "/login", "not logged in",
		"login required", "oauth token has expired", "api key not valid"):
		return workflows.BlockerAuth
	case has("credit balance", "billing", "payment required", "402", "insufficient_quota", "insufficient credits"):
		return workflows.BlockerBilling
	case has("usage limit", "rate limit", "rate_limit", "quota exceeded", "resource_exhausted", "429", "too many requests"):
		return workflows.BlockerRateLimit
	}
	return ""
}

// isRetry says whether an error message reports a transient retry.
func isRetry(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "retrying") || strings.Contains(m, "reconnecting") || strings.Contains(m, "retry in")
}
