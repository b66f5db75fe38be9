// Package sdklogs adapts the Temporal SDK's log lines to what they mean
// for an operator: the SDK logs every activity that returns an error as
// "Activity error." at ERROR, and durawait's activities return errors that
// are answers, not faults (a host that does not follow an agent's CLI now,
// a loop that left no answer on a worker that never ran it, a cancelled
// loop). Those go to DEBUG; every other line passes as it is.
package sdklogs

import (
	"context"
	"log/slog"
	"strings"
)

// activityErrorMessage is the message of the SDK's activity failure line.
const activityErrorMessage = "Activity error."

// expected are marks of the errors that answer rather than fail: the
// error types of durawait's own answers (a temporal.ApplicationError's
// "(type: T" in its text) and a cancellation.
var expected = []string{
	"(type: NoLoopAnswer",
	"(type: NotFollowed",
	"(type: NotTheCallers",
	"context canceled",
	"(type: Canceled",
}

// Handler wraps an slog handler for the Temporal SDK's logger.
type Handler struct{ next slog.Handler }

// New returns the handler that passes the SDK's lines to next, with the
// expected activity errors at DEBUG.
func New(next slog.Handler) *Handler { return &Handler{next: next} }

// Enabled reports whether next takes records at level; a record whose
// level Handle lowers is checked again there.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle passes r on, at DEBUG when it is an expected activity error.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && r.Message == activityErrorMessage && isExpected(r) {
		if !h.next.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		lowered := slog.NewRecord(r.Time, slog.LevelDebug, r.Message, r.PC)
		r.Attrs(func(a slog.Attr) bool { lowered.AddAttrs(a); return true })
		r = lowered
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs returns the handler with attrs on every line.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(attrs)}
}

// WithGroup returns the handler with its lines' attributes in group.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name)}
}

// isExpected reports whether r's error is one that answers.
func isExpected(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "Error" {
			return true
		}
		text := a.Value.String()
		for _, mark := range expected {
			if strings.Contains(text, mark) {
				found = true
				return false
			}
		}
		return true
	})
	return found
}
