package mcpwire

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"time"
)

// mcp-go's streamable HTTP server forwards a call's notifications to its
// response stream from a goroutine of its own, and stops forwarding when
// the call's handler returns: a notification sent just before the return
// (a wait's last message: the agent blocker it ended on) can be taken off
// the queue and then dropped instead of written. durawait counts, per
// tool call, the notifications its handler sent and those written on the
// call's stream, and its handlers wait, briefly, for the two to meet
// before they return (AwaitNotificationsWritten).

// notificationTally counts one call's notifications, sent and written.
type notificationTally struct {
	mu            sync.Mutex
	sent, written int
	// changed is closed and replaced at each write.
	changed chan struct{}
}

type tallyKey struct{}

// withNotificationTally gives r's context a tally, and returns the writer
// that counts the notifications written through w.
func withNotificationTally(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	t := &notificationTally{changed: make(chan struct{})}
	return tallyWriter{ResponseWriter: w, tally: t}, r.WithContext(context.WithValue(r.Context(), tallyKey{}, t))
}

// NoteNotificationSent counts a notification the call of ctx sent on its
// own stream (nothing when ctx is not an HTTP tool call's).
func NoteNotificationSent(ctx context.Context) {
	if t, ok := ctx.Value(tallyKey{}).(*notificationTally); ok {
		t.mu.Lock()
		t.sent++
		t.mu.Unlock()
	}
}

// AwaitNotificationsWritten waits until every notification the call of
// ctx sent is written on its stream, for at most d, or until ctx ends.
func AwaitNotificationsWritten(ctx context.Context, d time.Duration) {
	t, ok := ctx.Value(tallyKey{}).(*notificationTally)
	if !ok {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		t.mu.Lock()
		done, changed := t.written >= t.sent, t.changed
		t.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// notificationMark is in every notification mcp-go writes (one per Write).
var notificationMark = []byte(`"method":"notifications/`)

// tallyWriter counts the notifications written on a call's stream.
type tallyWriter struct {
	http.ResponseWriter
	tally *notificationTally
}

func (w tallyWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if err == nil && bytes.Contains(p, notificationMark) {
		t := w.tally
		t.mu.Lock()
		t.written++
		close(t.changed)
		t.changed = make(chan struct{})
		t.mu.Unlock()
	}
	return n, err
}

// Flush passes a flush on.
func (w tallyWriter) Flush() {
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the writer underneath.
func (w tallyWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
