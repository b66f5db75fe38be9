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

// modernStatus is the HTTP status of a 2026-07-28 answer, as mcp-go gives
// it for the requests it answers: a JSON-RPC error of the request's own
// making is 400 (404 for an unknown method); anything else is 200.
func modernStatus(resp any) int {
	e, ok := resp.(mcp.JSONRPCError)
	if !ok {
		return http.StatusOK
	}
	switch e.Error.Code {
	case mcp.METHOD_NOT_FOUND:
		return http.StatusNotFound
	case mcp.HEADER_MISMATCH, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, mcp.UNSUPPORTED_PROTOCOL_VERSION,
		mcp.INVALID_REQUEST, mcp.INVALID_PARAMS, mcp.PARSE_ERROR:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// headerMismatch checks a modern request over HTTP as mcp-go checks the
// ones it answers, so that the requests the tools answer themselves meet
// the same rules: the protocol version in both the Mcp-Protocol-Version
// header and _meta, and alike; no Last-Event-ID; the standard headers
// (SEP-2243: Mcp-Method always, Mcp-Name for tools/call). It also checks
// the Mcp-Name of a task method, which routes the request by its task:
// when sent, it must name params.taskId (any front end answers any task,
// so it is not required). It returns the refusal, or nil.
func headerMismatch(h http.Header, msg message) *mcp.JSONRPCError {
	refuse := func(code int, text string) *mcp.JSONRPCError {
		resp := ErrorResponse(msg.ID, code, text)
		return &resp
	}
	version, meta := h.Get(mcp.HeaderProtocolVersion), msg.metaProtocolVersion()
	switch {
	case h.Get(mcp.HeaderLastEventID) != "":
		return refuse(mcp.HEADER_MISMATCH, mcp.HeaderLastEventID+" is not supported in protocol version "+mcp.ProtocolVersion20260728+
			": streams are not resumable, re-issue the request with a new ID")
	case version == "":
		return refuse(mcp.HEADER_MISMATCH, mcp.HeaderProtocolVersion+" header is required for requests carrying "+mcp.MetaKeyProtocolVersion)
	case meta == "":
		return refuse(mcp.INVALID_PARAMS, "missing or invalid _meta field "+mcp.MetaKeyProtocolVersion)
	case meta != version:
		return refuse(mcp.HEADER_MISMATCH, mcp.HeaderProtocolVersion+" header "+version+" does not match request "+mcp.MetaKeyProtocolVersion+" "+meta)
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
