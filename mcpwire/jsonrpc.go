package mcpwire

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// message is the envelope of one incoming JSON-RPC message, decoded just
// far enough to route it.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  json.RawMessage `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`

	// method is Method as a string; empty for responses and for a method
	// that is not a string.
	method string
}

// parseMessage decodes a message's envelope; ok is false for anything that is
// not a JSON object.
func parseMessage(raw []byte) (m message, ok bool) {
	if json.Unmarshal(raw, &m) != nil {
		return message{}, false
	}
	_ = json.Unmarshal(m.Method, &m.method)
	return m, true
}

// isNotification reports whether m is a notification: a method and no id.
func (m message) isNotification() bool { return len(m.Method) > 0 && !m.hasID() }

// isRequest reports whether m is a request: a method and an id.
func (m message) isRequest() bool { return m.method != "" && m.hasID() }

// badID reports whether m has a method and an id that JSON-RPC 2.0 and
// MCP forbid: null, or anything but a string or a number.
func (m message) badID() bool {
	id := bytes.TrimSpace(m.ID)
	if len(m.Method) == 0 || len(id) == 0 {
		return false
	}
	return id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9')
}

func (m message) hasID() bool {
	return len(m.ID) > 0 && !bytes.Equal(bytes.TrimSpace(m.ID), []byte("null"))
}

// wellFormedNotification reports whether a notification follows JSON-RPC
// 2.0 and the MCP schema of either era: version "2.0", a non-empty string
// method, and params, when present, an object whose _meta, when present, is
// an object too. Protocol 2026-07-28 requires nothing more of a
// notification (NotificationMetaObject is optional).
func (m message) wellFormedNotification() bool {
	if m.JSONRPC != mcp.JSONRPC_VERSION || m.method == "" || m.hasID() {
		return false
	}
	if len(m.Params) == 0 {
		return true
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(m.Params, &params) != nil || params == nil {
		return false
	}
	if meta, ok := params["_meta"]; ok {
		var obj map[string]json.RawMessage
		if json.Unmarshal(meta, &obj) != nil || obj == nil {
			return false
		}
	}
	return true
}

// metaProtocolVersion is the protocol version a message declares in its
// params._meta (protocol 2026-07-28 and later), or "".
func (m message) metaProtocolVersion() string {
	var p struct {
		Meta *mcp.Meta `json:"_meta"`
	}
	if len(m.Params) == 0 || json.Unmarshal(m.Params, &p) != nil {
		return ""
	}
	return p.Meta.ProtocolVersion()
}

// ErrorResponse is the JSON-RPC error response to the request with the
// given id (nil: the request's id could not be read).
func ErrorResponse(id json.RawMessage, code int, message string) mcp.JSONRPCError {
	var rid any
	if len(id) > 0 {
		_ = json.Unmarshal(id, &rid)
	}
	return mcp.JSONRPCError{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(rid),
		Error:   mcp.JSONRPCErrorDetails{Code: code, Message: message},
	}
}

// ResultResponse is the JSON-RPC success response to the request with the
// given id.
func ResultResponse(id json.RawMessage, result any) mcp.JSONRPCResponse {
	var rid any
	if len(id) > 0 {
		_ = json.Unmarshal(id, &rid)
	}
	return mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(rid), Result: result}
}

// isBatch reports whether raw is a JSON-RPC batch (a JSON array).
func isBatch(raw []byte) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '['
}

// batchError answers a JSON-RPC batch, which MCP does not allow.
func batchError() mcp.JSONRPCError {
	return ErrorResponse(nil, mcp.INVALID_REQUEST, "JSON-RPC batches (a JSON array) are not supported by MCP: send one message per request")
}

// badIDError answers a request whose id is not a string or a number.
func badIDError(m message) mcp.JSONRPCError {
	return ErrorResponse(nil, mcp.INVALID_REQUEST, fmt.Sprintf("id: must be a string or a number (got %s; a notification has no id member)", kindOf(m.ID)))
}

// forMCPGo returns the request raw as mcp-go should see it: protocol
// 2026-07-28 ignores the 2025-11-25 params.task (its tasks are an extension
// with another wire format), so a modern tools/call runs as a plain call
// rather than as a task mcp-go would keep in memory. changed reports
// whether raw was rewritten.
func forMCPGo(msg message, raw []byte, modern bool) (out []byte, changed bool) {
	if !modern || msg.method != string(mcp.MethodToolsCall) {
		return raw, false
	}
	if plain, ok := withoutTaskParam(raw); ok {
		return plain, true
	}
	return raw, false
}

// withoutTaskParam removes params.task from a tools/call request.
func withoutTaskParam(body []byte) ([]byte, bool) {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return nil, false
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(req["params"], &params) != nil {
		return nil, false
	}
	if _, has := params["task"]; !has {
		return nil, false
	}
	delete(params, "task")
	p, err := json.Marshal(params)
	if err != nil {
		return nil, false
	}
	req["params"] = p
	out, err := json.Marshal(req)
	return out, err == nil
}
