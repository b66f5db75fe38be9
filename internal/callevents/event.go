// Package callevents carries durawait's tool-call events from the MCP front
// end to the subscribers of GET /events: a hub that fans events out without
// ever blocking a tool call (a bounded buffer per subscriber; what does not
// fit is dropped and counted), the truncation of results to
// tool_result_max_length, the tool filter of a subscription, and the
// Server-Sent Events framing. docs/operations.md describes the stream.
package callevents

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// The event types, the SSE "event:" field of each frame. They are named
// like the aura.* tool-call events of the wait_for contract, under
// durawait's own prefix.
const (
	// TypeStarted: a tool call began; for a wait tool, once the wait was
	// started or attached to (WaitID and WaitStart are set).
	TypeStarted = "durawait.tool_call.started"
	// TypeProgress: a sample or state change of the call's wait, the same
	// progress its MCP progress notifications carry.
	TypeProgress = "durawait.tool_call.progress"
	// TypeEnded: the call returned; Result holds its result, truncated.
	TypeEnded = "durawait.tool_call.ended"
	// TypeDropped: events were dropped for this subscriber because it read
	// too slowly; Dropped counts them.
	TypeDropped = "durawait.dropped"
)

// Event is one tool-call event.
type Event struct {
	// Seq numbers the events of a process from 1; it is the SSE "id:".
	Seq  uint64    `json:"seq"`
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	// Tool is the tool the client called (wait_for, not the probed tool).
	Tool string `json:"tool,omitempty"`
	// CallID is fresh for every tools/call.
	CallID string `json:"call_id,omitempty"`
	// WaitID is the workflow ID of the call's wait, when it has one.
	WaitID string `json:"wait_id,omitempty"`
	// WaitStart says how the call came to its wait: "started" (it started
	// the workflow), "attached" (an identical call had started it, or the
	// call waits on an existing one such as wait_agent's invocation), or
	// "started_or_attached" when Temporal's answer did not say.
	WaitStart string `json:"wait_start,omitempty"`
	// Target is what the call's wait waits for, in one short line (the
	// wait's DurawaitTarget), when the call has a wait of its own.
	Target string `json:"target,omitempty"`
	// Principal is the caller's principal as the logs and DurawaitCaller
	// name it: "anonymous" for the local user.
	Principal string `json:"principal,omitempty"`
	// Owner is the caller's principal as authenticated, "" for the local
	// user: the principal whose subscriptions see the event (Filter). It
	// is not sent, so a principal named "anonymous" never sees the local
	// user's events.
	Owner string `json:"-"`
	// Session is the MCP session ID, when the protocol has sessions.
	Session string `json:"session,omitempty"`
	// Client is the MCP client's name/version, when known.
	Client string `json:"client,omitempty"`

	// Progress, Total and Message are a progress event's sample or state
	// change (Total 0: unknown).
	Progress float64 `json:"progress,omitempty"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`

	// Outcome, DurationMS, IsError and Result describe an ended call.
	// Outcome is the wait's reason or status as the call saw it (matched,
	// timeout, running, ...), wait_for_text's error code, "error" for any
	// other error result, "client_gone" when the caller went away (the
	// wait runs on), or "task_created" for a task-augmented call: the same
	// values as the log lines and the durawait.waits.ended metric.
	Outcome    string `json:"outcome,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
	IsError    bool   `json:"is_error,omitempty"`
	// Result is the JSON of the MCP tool result, cut to the configured
	// length; ResultCut counts the characters cut (0: whole).
	Result    string `json:"result,omitempty"`
	ResultCut int    `json:"result_cut_chars,omitempty"`

	// Dropped counts the events a slow subscriber missed (TypeDropped).
	Dropped int64 `json:"dropped,omitempty"`
}

// DefaultResultMaxLength is tool_result_max_length's default, in characters.
const DefaultResultMaxLength = 16384

// Truncate cuts s to at most max characters (Unicode code points, never
// inside one) and appends a marker saying how many were cut. It returns the
// text and the number of characters cut (0 when s fits).
func Truncate(s string, max int) (string, int) {
	if max < 0 {
		max = 0
	}
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s, 0
	}
	cut := n - max
	end := 0
	for i := 0; i < max; i++ {
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
	}
	return s[:end] + fmt.Sprintf("…[truncated: %d more characters]", cut), cut
}
