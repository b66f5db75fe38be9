package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// temporalLogger adapts a *slog.Logger to the Temporal server's log.Logger.
// The server logs a great deal at info level; level filters what is kept.
type temporalLogger struct {
	logger *slog.Logger
	level  *slog.LevelVar
	// building is set while the server is built: a fatal line then
	// panics (see Fatal).
	building *atomic.Bool
}

var _ log.Logger = temporalLogger{}

func newTemporalLogger(logger *slog.Logger, level *slog.LevelVar, building *atomic.Bool) temporalLogger {
	return temporalLogger{logger: logger.With("component", "temporal"), level: level, building: building}
}

func (l temporalLogger) Debug(msg string, tags ...tag.Tag)  { l.log(slog.LevelDebug, msg, tags) }
func (l temporalLogger) Info(msg string, tags ...tag.Tag)   { l.log(slog.LevelInfo, msg, tags) }
func (l temporalLogger) Warn(msg string, tags ...tag.Tag)   { l.log(slog.LevelWarn, msg, tags) }
func (l temporalLogger) Error(msg string, tags ...tag.Tag)  { l.log(slog.LevelError, msg, tags) }
func (l temporalLogger) DPanic(msg string, tags ...tag.Tag) { l.log(slog.LevelError, msg, tags) }
func (l temporalLogger) Panic(msg string, tags ...tag.Tag)  { l.log(slog.LevelError, msg, tags) }

// Fatal logs msg. While the server is built it then panics with a
// *fatalError, which startServer returns as the start's error: the
// server's code does not go on after a fatal line (its own logger exits
// the process), and going on did not work (a gRPC listener that failed on
// a taken port was served as nil and crashed the process from another
// goroutine). Otherwise a fatal line is logged as an error, as before.
func (l temporalLogger) Fatal(msg string, tags ...tag.Tag) {
	l.log(slog.LevelError, msg, tags)
	if l.building != nil && l.building.Load() {
		panic(newFatalError(msg, tags))
	}
}

// fatalError is a fatal log line of the Temporal server, as an error. Its
// tags come as text (the server's tags give no error value back), so
// addressInUse matches its words.
type fatalError struct{ msg string }

func newFatalError(msg string, tags []tag.Tag) *fatalError {
	for _, t := range tags {
		msg += fmt.Sprintf(" %s=%v", t.Key(), t.Value())
	}
	return &fatalError{msg: msg}
}

func (e *fatalError) Error() string { return "temporal server: " + e.msg }

// httpAPIOff is the server's warning that its frontend has no HTTP API:
// durawait turns that API off on purpose (access.go), so the warning is
// dropped.
const httpAPIOff = "HTTP API port has not been set"

func (l temporalLogger) log(level slog.Level, msg string, tags []tag.Tag) {
	if level < l.level.Level() || !l.logger.Enabled(context.Background(), level) || strings.HasPrefix(msg, httpAPIOff) {
		return
	}
	attrs := make([]slog.Attr, len(tags))
	for i, t := range tags {
		attrs[i] = slog.Any(t.Key(), t.Value())
	}
	l.logger.LogAttrs(context.Background(), level, msg, attrs...)
}
