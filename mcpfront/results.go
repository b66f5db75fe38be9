package mcpfront

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"go.temporal.io/sdk/temporal"
)

// structuredResult returns v as structured content with the same JSON as text.
func structuredResult(v any) *mcp.CallToolResult {
	text, err := json.Marshal(v)
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("encode result: %v", err))
	}
	return mcp.NewToolResultStructured(v, string(text))
}

// workflowErrorMessage digs the application error's own message out of the
// wrappers Temporal puts around it.
func workflowErrorMessage(err error) string {
	var failure *loopFailure
	if errors.As(err, &failure) {
		return failure.message
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		return fmt.Sprintf("no worker answered in time (%s timeout); is a durawait worker running on the task queue?", timeoutType(timeoutErr))
	}
	return err.Error()
}

// timeoutType names a Temporal timeout in words ("schedule-to-start").
func timeoutType(err *temporal.TimeoutError) string {
	name := strings.TrimPrefix(err.TimeoutType().String(), "TIMEOUT_TYPE_")
	if name == "" || name == "UNSPECIFIED" {
		return "workflow"
	}
	return strings.ToLower(strings.ReplaceAll(name, "_", "-"))
}

// loopFailure is a wait's failure as its loop told it (workflows.WaitFailed).
type loopFailure struct{ message string }

func (e *loopFailure) Error() string { return e.message }
