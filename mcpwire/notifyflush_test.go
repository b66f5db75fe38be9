package mcpwire

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A call's answer waits for the notifications it sent to be written on its
// stream, and no longer than its bound when one never is; a context that is
// not an HTTP tool call's waits for nothing.
func TestAnAnswerWaitsForItsNotificationsToBeWritten(t *testing.T) {
	w, r := withNotificationTally(httptest.NewRecorder(), httptest.NewRequest("POST", "/mcp", nil))
	ctx := r.Context()
	NoteNotificationSent(ctx)
	written := make(chan struct{})
	go func() {
		_, _ = w.Write([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n"))
		close(written)
	}()
	AwaitNotificationsWritten(ctx, time.Minute)
	select {
	case <-written:
	default:
		t.Fatal("returned before the notification was written")
	}

	NoteNotificationSent(ctx)
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)) // not a notification
	start := time.Now()
	AwaitNotificationsWritten(ctx, 50*time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "waited its bound for the unwritten one")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	AwaitNotificationsWritten(cancelled, time.Minute) // returns: the call is gone
	AwaitNotificationsWritten(context.Background(), time.Minute)
}
