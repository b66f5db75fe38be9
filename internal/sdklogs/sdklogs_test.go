package sdklogs

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/sdk/temporal"
)

// The SDK's "Activity error." of an answer goes to DEBUG (dropped below
// it); a real failure stays an ERROR; other lines pass as they are.
func TestExpectedActivityErrorsAreDebug(t *testing.T) {
	var b bytes.Buffer
	logger := slog.New(New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelInfo}))).With("component", "temporal-sdk")
	logger.Error("Activity error.", "ActivityType", "LoopAnswer",
		"Error", temporal.NewNonRetryableApplicationError("the loop left no answer on this worker", "NoLoopAnswer", nil))
	logger.Error("Activity error.", "ActivityType", "AgentLive",
		"Error", temporal.NewApplicationError("the run does not follow its CLI on this worker now", "NotFollowed"))
	assert.Empty(t, b.String(), "answers, not faults: below the INFO level")

	logger.Error("Activity error.", "ActivityType", "PollProbe", "Error", errors.New("sample 3: probe returned 300 KiB"))
	logger.Warn("Failed to poll for task.", "Error", errors.New("context canceled"))
	out := b.String()
	assert.Contains(t, out, `level=ERROR msg="Activity error." component=temporal-sdk ActivityType=PollProbe`)
	assert.Contains(t, out, `level=WARN msg="Failed to poll for task."`, "only activity errors are read")

	b.Reset()
	debug := slog.New(New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})))
	debug.Error("Activity error.", "Error", errors.New("context canceled"))
	assert.Contains(t, b.String(), `level=DEBUG msg="Activity error."`)
}
