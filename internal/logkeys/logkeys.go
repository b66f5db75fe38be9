// Package logkeys gives every log line's field names one style,
// snake_case, whoever wrote the line: durawait's own fields already are
// (wait_id, duration_ms), the Temporal SDK's are CamelCase (WorkflowID,
// TaskQueue) and the Temporal server's kebab-case (wf-id, shard-id). A
// query over the logs (jq, Loki, a SIEM) then needs one spelling per
// field. See docs/operations.md, "Log lines of each wait".
package logkeys

import (
	"context"
	"log/slog"
	"strings"
	"unicode"
)

// New is next with every attribute key, and every group name, in
// snake_case (Snake). A line's field that repeats, key and value, one its
// logger was given With (the SDK's RunID and durawait's run_id, once both
// are run_id) is written once.
func New(next slog.Handler) slog.Handler { return handler{next: next} }

type handler struct {
	next slog.Handler
	// given are the top-level attributes given With, by key (none once a
	// group is opened: a record's attributes then go in the group).
	given map[string]slog.Value
}

func (h handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		a = rename(a)
		if !repeats(h.given, a) {
			out.AddAttrs(a)
		}
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	renamed := make([]slog.Attr, len(attrs))
	var given map[string]slog.Value
	if h.given != nil || len(attrs) > 0 {
		given = make(map[string]slog.Value, len(h.given)+len(attrs))
		for k, v := range h.given {
			given[k] = v
		}
	}
	for i, a := range attrs {
		renamed[i] = rename(a)
		given[renamed[i].Key] = renamed[i].Value
	}
	return handler{next: h.next.WithAttrs(renamed), given: given}
}

func (h handler) WithGroup(name string) slog.Handler {
	return handler{next: h.next.WithGroup(Snake(name))}
}

// repeats reports whether a repeats, key and value, an attribute given
// With. Values of kind Any are never taken for repeats: Value.Equal
// compares them with ==, which panics on a slice or a map.
func repeats(given map[string]slog.Value, a slog.Attr) bool {
	v, ok := given[a.Key]
	if !ok || v.Kind() == slog.KindAny || a.Value.Kind() == slog.KindAny {
		return false
	}
	return v.Equal(a.Value)
}

// rename is a with its key, and its group's keys, in snake_case.
func rename(a slog.Attr) slog.Attr {
	a.Key = Snake(a.Key)
	if a.Value.Kind() == slog.KindGroup {
		group := a.Value.Group()
		renamed := make([]slog.Attr, len(group))
		for i, g := range group {
			renamed[i] = rename(g)
		}
		a.Value = slog.GroupValue(renamed...)
	}
	return a
}

// Snake is key in snake_case: "WorkflowID" is "workflow_id", "TaskQueue"
// "task_queue", "wf-namespace-id" "wf_namespace_id", "HTTPServer"
// "http_server"; a key already in snake_case is itself. Dots (slog's
// group separators in text) stay.
func Snake(key string) string {
	if !strings.ContainsFunc(key, func(r rune) bool { return unicode.IsUpper(r) || r == '-' || r == ' ' }) {
		return key
	}
	runes := []rune(key)
	var b strings.Builder
	for i, r := range runes {
		switch {
		case r == '-' || r == ' ':
			b.WriteByte('_')
		case unicode.IsUpper(r):
			if i > 0 && wordBreak(runes, i) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// wordBreak reports whether the capital at runes[i] starts a word: after
// a lower-case letter or a digit ("runID"), or as the last capital of an
// acronym followed by a lower-case letter ("HTTPServer").
func wordBreak(runes []rune, i int) bool {
	prev := runes[i-1]
	if prev == '_' || prev == '-' || prev == ' ' || prev == '.' {
		return false
	}
	if unicode.IsLower(prev) || unicode.IsDigit(prev) {
		return true
	}
	return unicode.IsUpper(prev) && i+1 < len(runes) && unicode.IsLower(runes[i+1])
}
