package mcpwire

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// logLevels are the levels of MCP logging (RFC 5424's), least severe
// first.
var logLevels = []mcp.LoggingLevel{
	mcp.LoggingLevelDebug, mcp.LoggingLevelInfo, mcp.LoggingLevelNotice, mcp.LoggingLevelWarning,
	mcp.LoggingLevelError, mcp.LoggingLevelCritical, mcp.LoggingLevelAlert, mcp.LoggingLevelEmergency,
}

// LogEnabled reports whether the caller of ctx asked for log messages at
// level: with logging/setLevel on its session (protocol 2025-11-25), or in
// its request's _meta (io.modelcontextprotocol/logLevel, 2026-07-28). A
// caller that asked for none gets none.
func LogEnabled(ctx context.Context, level mcp.LoggingLevel) bool {
	least := CallerFrom(ctx).LogLevel
	return least != "" && slices.Index(logLevels, level) >= slices.Index(logLevels, least)
}

// parseSetLevel reads the level of a logging/setLevel request.
func parseSetLevel(params json.RawMessage) (mcp.LoggingLevel, error) {
	var p struct {
		Level mcp.LoggingLevel `json:"level"`
	}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return "", fmt.Errorf("params: %w", err)
		}
	}
	if !slices.Contains(logLevels, p.Level) {
		names := make([]string, len(logLevels))
		for i, l := range logLevels {
			names[i] = string(l)
		}
		return "", fmt.Errorf("level: must be one of %s (got %q)", strings.Join(names, ", "), p.Level)
	}
	return p.Level, nil
}

// setLevelResponse answers a logging/setLevel request: keep is given the
// level, and the answer is the empty result; a bad level is invalid
// params.
func setLevelResponse(msg message, keep func(mcp.LoggingLevel)) any {
	level, err := parseSetLevel(msg.Params)
	if err != nil {
		return ErrorResponse(msg.ID, mcp.INVALID_PARAMS, "logging/setLevel: "+err.Error())
	}
	keep(level)
	return ResultResponse(msg.ID, struct{}{})
}

// metaLogLevel is the log level a 2026-07-28 request asks for in its
// _meta, or "".
func (m message) metaLogLevel() mcp.LoggingLevel {
	var p struct {
		Meta *mcp.Meta `json:"_meta"`
	}
	if len(m.Params) == 0 || json.Unmarshal(m.Params, &p) != nil || p.Meta == nil {
		return ""
	}
	level := p.Meta.LogLevel()
	if !slices.Contains(logLevels, level) {
		return ""
	}
	return level
}
