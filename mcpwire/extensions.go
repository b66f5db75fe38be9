package mcpwire

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// TasksExtension names the tasks extension of protocol 2026-07-28
// (modelcontextprotocol/ext-tasks, SEP-2663): a tools/call may be answered
// with a task, read with tasks/get, answered with tasks/update and
// cancelled with tasks/cancel.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Declares reports whether the request's client declared the extension
// named ext in this request's own capabilities (params._meta,
// io.modelcontextprotocol/clientCapabilities): from 2026-07-28 a client
// declares its capabilities per request, and a declaration on an earlier
// request counts for nothing.
func (r Request) Declares(ext string) bool {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if len(r.Params) == 0 || json.Unmarshal(r.Params, &p) != nil {
		return false
	}
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(p.Meta[mcp.MetaKeyClientCapabilities], &caps) != nil {
		return false
	}
	_, ok := caps.Extensions[ext]
	return ok
}

// MissingExtensionResponse refuses a request that needs the extension ext
// from a client that did not declare it: -32021 (Missing Required Client
// Capability), with the capability in data.requiredCapabilities.
func MissingExtensionResponse(id json.RawMessage, ext, message string) mcp.JSONRPCError {
	resp := ErrorResponse(id, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, message)
	resp.Error.Data = map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{ext: map[string]any{}}}}
	return resp
}

// taskMethods are the methods of the tasks extension that name a task: on
// streamable HTTP their Mcp-Name header carries params.taskId.
var taskMethods = map[string]bool{"tasks/get": true, "tasks/update": true, "tasks/cancel": true}

// headerMismatch checks the standard headers of a modern request the
// tools answer themselves, as mcp-go checks those it answers (SEP-2243:
// Mcp-Method always, Mcp-Name for tools/call), and the Mcp-Name of a task
// method, which routes the request by its task: when sent, it must name
// params.taskId (any front end answers any task, so it is not required).
// It returns the refusal (-32020), or nil. A request without the
// Mcp-Protocol-Version header (its version in _meta only) is not checked,
// as mcp-go does not check it.
func headerMismatch(h http.Header, msg message) *mcp.JSONRPCError {
	version := h.Get(mcp.HeaderProtocolVersion)
	if version == "" {
		return nil
	}
	if err := mcp.ValidateStandardHeaders(h.Get, version, mcp.MCPMethod(msg.method), msg.Params); err != nil {
		resp := ErrorResponse(msg.ID, mcp.HEADER_MISMATCH, err.Error())
		return &resp
	}
	name := h.Get(mcp.HeaderName)
	if !taskMethods[msg.method] || name == "" {
		return nil
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	if decoded, ok := mcp.DecodeHeaderValue(name); !ok || decoded != p.TaskID {
		resp := ErrorResponse(msg.ID, mcp.HEADER_MISMATCH, fmt.Sprintf(
			"%s header: %q does not name the task of params.taskId %q (a task request's %s is its task ID)", mcp.HeaderName, name, p.TaskID, mcp.HeaderName))
		return &resp
	}
	return nil
}
