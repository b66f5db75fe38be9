package mcpfront

import (
	"encoding/json"
	"errors"
	"fmt"

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
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return err.Error()
}
