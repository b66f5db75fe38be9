package downstream

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// mcp-go's client decodes a tool's schemas into structured types that drop
// keys such as "$schema" and add "required": [] when re-encoded. durawait
// re-exposes each downstream tool with exactly the schemas its server sent,
// so it keeps the raw JSON of every tools/list answer as it passes through
// the transport.

// schemaRecorder keeps the raw schemas from the tools/list answers one client
// received, by tool name.
type schemaRecorder struct {
	mu      sync.Mutex
	schemas map[string]rawSchemas
}

type rawSchemas struct {
	input, output json.RawMessage
}

// send forwards req over t and records the schemas of a tools/list answer.
func (r *schemaRecorder) send(ctx context.Context, t transport.Interface, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	res, err := t.SendRequest(ctx, req)
	if err != nil || res == nil || res.Error != nil || req.Method != string(mcp.MethodToolsList) {
		return res, err
	}
	var page struct {
		Tools []struct {
			Name         string          `json:"name"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(res.Result, &page) != nil {
		return res, err // the client reports the malformed answer
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.schemas == nil {
		r.schemas = map[string]rawSchemas{}
	}
	for _, t := range page.Tools {
		r.schemas[t.Name] = rawSchemas{input: t.InputSchema, output: t.OutputSchema}
	}
	return res, err
}

// apply gives each tool the raw schemas its server sent, in place of the
// decoded ones.
func (r *schemaRecorder) apply(tools []mcp.Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range tools {
		raw, ok := r.schemas[tools[i].Name]
		if !ok {
			continue
		}
		if isJSONValue(raw.input) {
			tools[i].InputSchema = mcp.ToolInputSchema{}
			tools[i].RawInputSchema = raw.input
		}
		if isJSONValue(raw.output) {
			tools[i].OutputSchema = mcp.ToolOutputSchema{}
			tools[i].RawOutputSchema = raw.output
		}
	}
}

// isJSONValue reports whether raw holds a value other than null.
func isJSONValue(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// The transports, each with its tools/list answers recorded. Each embeds its
// transport, so the client still sees every optional interface it has.

type recordingStdio struct {
	*transport.Stdio
	rec *schemaRecorder
}

func (t recordingStdio) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	return t.rec.send(ctx, t.Stdio, req)
}

type recordingSSE struct {
	*transport.SSE
	rec *schemaRecorder
}

func (t recordingSSE) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	return t.rec.send(ctx, t.SSE, req)
}

type recordingHTTP struct {
	*transport.StreamableHTTP
	rec *schemaRecorder
}

func (t recordingHTTP) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	return t.rec.send(ctx, t.StreamableHTTP, req)
}

type recordingInProcess struct {
	*transport.InProcessTransport
	rec *schemaRecorder
}

func (t recordingInProcess) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	return t.rec.send(ctx, t.InProcessTransport, req)
}
