package stdiobridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
)

// metaProtocolVersion is the _meta key by which a 2026-07-28 request names
// its protocol version (that era has no initialize handshake).
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// head is what the bridge needs to know of a JSON-RPC message.
type head struct {
	// ID is the raw id, or nil for a notification.
	ID json.RawMessage
	// Method is empty for a response.
	Method string
	// ProtocolVersion is the version a request names in its _meta, if any.
	ProtocolVersion string
	// Params are the message's params as sent.
	Params json.RawMessage
}

// kind of a message.
func (h head) isRequest() bool      { return h.Method != "" && h.ID != nil }
func (h head) isNotification() bool { return h.Method != "" && h.ID == nil }

// parseHead reads a JSON-RPC message's id, method and _meta protocol
// version. A message that is not a JSON object is an error.
func parseHead(line []byte) (head, error) {
	var raw struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return head{}, fmt.Errorf("parse JSON-RPC message: %w", err)
	}
	h := head{Method: raw.Method, Params: raw.Params}
	if len(raw.ID) > 0 && string(raw.ID) != "null" {
		h.ID = raw.ID
	}
	var params struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(raw.Params, &params) == nil {
		var v string
		if json.Unmarshal(params.Meta[metaProtocolVersion], &v) == nil {
			h.ProtocolVersion = v
		}
	}
	return h, nil
}

// initializeResult reads the negotiated protocol version from the server's
// answer to initialize; ok is false for any other message.
func initializeResult(msg []byte) (version string, ok bool) {
	var r struct {
		Result *struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal(msg, &r) != nil || r.Result == nil || r.Result.ProtocolVersion == "" {
		return "", false
	}
	return r.Result.ProtocolVersion, true
}

// errorResponse is a JSON-RPC error answering the request id.
func errorResponse(id json.RawMessage, code int, message string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	return b
}

// refusalNotice is the log notification (notifications/message, level
// error, logger durawait) that tells a client why its session is refused.
func refusalNotice(reason error) []byte {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"method":  "notifications/message",
		"params": map[string]any{
			"level":  "error",
			"logger": "durawait",
			"data":   reason.Error(),
		},
	})
	return b
}

// JSON-RPC error codes the bridge answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeInternalError  = -32603
)

// readSSE calls fn with the data of each event of an SSE stream (data lines
// joined by newlines), until the stream ends. It returns the read error, or
// nil at a clean end.
func readSSE(r io.Reader, fn func(data []byte)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	var data bytes.Buffer
	has := false
	dispatch := func() {
		if has {
			fn(bytes.Clone(data.Bytes()))
		}
		data.Reset()
		has = false
	}
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		switch {
		case line == "":
			dispatch()
		case strings.HasPrefix(line, ":"):
			// A comment (keep-alive).
		case strings.HasPrefix(line, "data:"):
			if has {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			has = true
		}
		// event:, id: and retry: lines do not matter to the bridge.
	}
	dispatch()
	return sc.Err()
}

// lineWriter writes one JSON message per line, one writer at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// write writes msg compacted onto one line; a message that is not JSON is
// dropped with an error.
func (l *lineWriter) write(msg []byte) error {
	var b bytes.Buffer
	if err := json.Compact(&b, msg); err != nil {
		return fmt.Errorf("server sent a message that is not JSON: %w", err)
	}
	b.WriteByte('\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.w.Write(b.Bytes())
	return err
}

// replaceID returns msg with its id set to id (raw JSON).
func replaceID(msg []byte, id string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, fmt.Errorf("rewrite message id: %w", err)
	}
	m["id"] = json.RawMessage(id)
	return json.Marshal(m)
}

// cancelledID is the requestId a notifications/cancelled names, or nil.
func cancelledID(line []byte) json.RawMessage {
	var n struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &n) != nil {
		return nil
	}
	return n.Params.RequestID
}

// isJSONRPCAnswer reports whether body is one JSON-RPC response (a result
// or an error).
func isJSONRPCAnswer(body []byte) bool {
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	return json.Unmarshal(body, &m) == nil && m.JSONRPC == "2.0" && (m.Result != nil || m.Error != nil)
}
