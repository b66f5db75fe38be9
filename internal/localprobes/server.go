// Package localprobes is durawait's built-in downstream MCP server,
// `local`: read-only probes of the machine durawait runs on, so that
// wait_for works with nothing else installed. It runs in durawait's own
// process (an in-process MCP transport) and offers:
//
//   - http_request: an HTTP(S) GET or HEAD; the status line, the headers
//     and an excerpt of the body.
//   - tcp_connect: whether a TCP port accepts a connection.
//   - file_stat and file_read: a file's existence, type, size, mode and
//     modification time; its contents, bounded.
//   - run_command: a command the operator configured, by name; its exit
//     status and output (only when the policy names commands).
//
// A target the Policy does not allow is an error result that names the
// argument and the rule; a target that is not ready yet (a port closed, a
// file missing, a server answering 503) is an ordinary result, which a
// wait polls again.
package localprobes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ServerName is the built-in server's name: its tools are local.<tool>.
const ServerName = "local"

// Output bounds. A probe's whole result stays far below wait_for's 256
// KiB observation limit.
const (
	// DefaultReadBytes is how much of a file or body a probe returns
	// unless the call asks for more.
	DefaultReadBytes = 64 << 10
	// MaxReadBytes is the most a call may ask for.
	MaxReadBytes = 192 << 10
	// maxHeaderBytes bounds one header value in a result, and
	// maxHeaderNameBytes its name.
	maxHeaderBytes     = 512
	maxHeaderNameBytes = 128
	// maxHeaders bounds the headers a result lists.
	maxHeaders = 64
)

// Probes serves the built-in probes under a Policy.
type Probes struct {
	policy Policy
	// lookup resolves a host name, and dialContext connects to a checked
	// address; tests replace them.
	lookup      lookupFunc
	dialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// New returns the probes under policy.
func New(policy Policy) *Probes {
	var d net.Dialer
	return &Probes{policy: policy, lookup: defaultLookup, dialContext: d.DialContext}
}

// Server returns the probes as an MCP server (version is durawait's).
func (p *Probes) Server(version string) *server.MCPServer {
	s := server.NewMCPServer(ServerName, version, server.WithToolCapabilities(false), server.WithRecovery(),
		server.WithInstructions("Read-only probes of this machine for durawait's wait_for: an HTTP request, a TCP connect, a file's state and contents, and the operator's allowed commands."))
	probe := func(name, title, description string, opts ...mcp.ToolOption) mcp.Tool {
		opts = append([]mcp.ToolOption{mcp.WithDescription(description), mcp.WithTitleAnnotation(title),
			mcp.WithReadOnlyHintAnnotation(true), mcp.WithDestructiveHintAnnotation(false),
			mcp.WithIdempotentHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)}, opts...)
		return mcp.NewTool(name, opts...)
	}
	s.AddTool(probe("http_request", "HTTP request",
		"Send an HTTP(S) GET or HEAD and return the status line ('HTTP 200 OK'), the response headers and the start of the body. "+
			"A server that does not answer yet returns 'no response: <why>'. Loopback hosts only, unless the operator allowed others (local.hosts).",
		mcp.WithString("url", mcp.Required(), mcp.Description("http:// or https:// URL, e.g. http://127.0.0.1:3000/healthz")),
		mcp.WithString("method", mcp.Enum("GET", "HEAD"), mcp.DefaultString("GET"), mcp.Description("GET (default) or HEAD")),
		mcp.WithInteger("max_bytes", mcp.Min(1), mcp.Max(MaxReadBytes), mcp.Description(fmt.Sprintf("most of the body to return (default %d)", DefaultReadBytes))),
		mcp.WithBoolean("insecure_tls", mcp.Description("accept any TLS certificate (a local dev server's self-signed one)")),
	), p.httpRequest)
	s.AddTool(probe("tcp_connect", "TCP connect",
		"Try a TCP connection and return 'open <host>:<port>' or 'closed <host>:<port>: <why>'. Loopback hosts only, unless the operator allowed others (local.hosts).",
		mcp.WithString("host", mcp.DefaultString("127.0.0.1"), mcp.Description("host name or address (default 127.0.0.1)")),
		mcp.WithInteger("port", mcp.Required(), mcp.Min(1), mcp.Max(65535), mcp.Description("TCP port")),
	), p.tcpConnect)
	s.AddTool(probe("file_stat", "File state",
		"Return whether a file exists ('exists: false', or 'exists: true' with its type, size, mode and modification time). Only under the folders the operator allowed (local.paths).",
		mcp.WithString("path", mcp.Required(), mcp.Description("absolute path")),
	), p.fileStat)
	s.AddTool(probe("file_read", "File contents",
		"Return a file's contents (by default its last 64 KiB; 'no such file: <path>' while it does not exist). Only under the folders the operator allowed (local.paths).",
		mcp.WithString("path", mcp.Required(), mcp.Description("absolute path")),
		mcp.WithInteger("max_bytes", mcp.Min(1), mcp.Max(MaxReadBytes), mcp.Description(fmt.Sprintf("most bytes to return (default %d)", DefaultReadBytes))),
		mcp.WithString("from", mcp.Enum("head", "tail"), mcp.DefaultString("tail"), mcp.Description("read the file's start (head) or its end (tail, the default)")),
	), p.fileRead)
	if names := p.commandNames(); len(names) > 0 {
		s.AddTool(probe("run_command", "Allowed command",
			"Run one of the commands the operator allowed (local.commands), as configured, and return 'exit: <status>' and its output.",
			mcp.WithString("name", mcp.Required(), mcp.Enum(names...), mcp.Description("the command's name: "+strings.Join(names, ", "))),
		), p.runCommand)
	}
	return s
}

func (p *Probes) commandNames() []string {
	names := make([]string, 0, len(p.policy.Commands))
	for n := range p.policy.Commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// answer turns a probe's text and error into its result: a refusal or a
// bad argument is an error result; any other error is too.
func answer(text string, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			return mcp.NewToolResultError("refused: " + refused.Error()), nil
		}
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText(text), nil
}

// argError is a bad argument.
func argError(field, format string, args ...any) error {
	return fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...))
}

// intArg reads an optional integer argument within [lo, hi].
func intArg(req mcp.CallToolRequest, field string, def, lo, hi int) (int, error) {
	raw, ok := req.GetArguments()[field]
	if !ok || raw == nil {
		return def, nil
	}
	f, ok := raw.(float64)
	if !ok || f != float64(int(f)) {
		return 0, argError(field, "must be an integer, got %v", raw)
	}
	n := int(f)
	if n < lo || n > hi {
		return 0, argError(field, "must be between %d and %d, got %d", lo, hi, n)
	}
	return n, nil
}

// validText is b as UTF-8 text, each run of invalid bytes replaced by one
// '?': never longer than b, so a result stays within its bound.
func validText(b []byte) string {
	return strings.ToValidUTF8(string(b), "?")
}

// stringArg reads a string argument, required or with a default.
func stringArg(req mcp.CallToolRequest, field, def string, required bool) (string, error) {
	raw, ok := req.GetArguments()[field]
	if !ok || raw == nil {
		if required {
			return "", argError(field, "is required")
		}
		return def, nil
	}
	s, ok := raw.(string)
	if !ok {
		return "", argError(field, "must be a string, got %v", raw)
	}
	if required && s == "" {
		return "", argError(field, "must not be empty")
	}
	return s, nil
}

// oneOf checks that value is one of allowed.
func oneOf(field, value string, allowed ...string) error {
	for _, a := range allowed {
		if value == a {
			return nil
		}
	}
	return argError(field, "must be one of %s, got %q", strings.Join(allowed, ", "), value)
}

// withTimeout bounds a probe call by the policy's timeout.
func (p *Probes) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, p.policy.timeout())
}
