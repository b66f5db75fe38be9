// Command demoprobe is a small MCP server whose tool outputs the caller
// controls. It is the demo downstream server of `make run` and the probe
// server of durawait's integration tests.
//
// Tools:
//
//	read_file {path}        the file's contents ("" while it does not exist)
//	structured_file {path}  the same as structured content only, no text
//	clock {}                the current UTC time, RFC 3339
//	counter {name}          "count=N", N counting the calls with that name
//	big {kib}               kib KiB of "x"
//	fail {message}          an isError result carrying message
//	hang {}                 never answers (until the call is cancelled)
//	env {}                  the server's environment, NAME=value per line
//	delete_file {path}      deletes the file (annotated destructive: wait_for
//	                        refuses to probe it unless the config allows it)
//
// Every tool but delete_file is annotated readOnlyHint: true.
//
// Flags: --http ADDR serves streamable HTTP at /mcp instead of stdio;
// --call-log FILE appends one line per call ("<tool> <args-json>"), and one
// line per call that carried W3C trace context in _meta to FILE.trace
// ("<tool> <traceparent>").
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	httpAddr := flag.String("http", "", "serve streamable HTTP on this address (at /mcp) instead of stdio")
	callLog := flag.String("call-log", "", "append a line per tool call to this file")
	flag.Parse()

	p := &probe{callLog: *callLog, counters: map[string]int{}}
	s := server.NewMCPServer("demoprobe", "1.0.0", server.WithToolCapabilities(false))
	p.register(s)
	registerEnvTool(s)

	if *httpAddr != "" {
		log.Printf("demoprobe: serving http://%s/mcp", *httpAddr)
		if err := http.ListenAndServe(*httpAddr, server.NewStreamableHTTPServer(s)); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := server.ServeStdio(s, server.WithWorkerPoolSize(100)); err != nil {
		log.Fatal(err)
	}
}

type probe struct {
	callLog  string
	mu       sync.Mutex
	counters map[string]int
}

func readOnly(title string) mcp.ToolOption {
	return mcp.WithToolAnnotation(mcp.ToolAnnotation{
		Title:           title,
		ReadOnlyHint:    mcp.ToBoolPtr(true),
		DestructiveHint: mcp.ToBoolPtr(false),
		IdempotentHint:  mcp.ToBoolPtr(true),
		OpenWorldHint:   mcp.ToBoolPtr(false),
	})
}

func (p *probe) register(s *server.MCPServer) {
	s.AddTool(mcp.NewTool("read_file", mcp.WithDescription("Read a text file; empty while it does not exist."),
		mcp.WithString("path", mcp.Required(), mcp.Description("file to read")), readOnly("Read a file")),
		p.logged(p.readFile))
	s.AddTool(mcp.NewTool("structured_file", mcp.WithDescription("A file's contents as structured content only."),
		mcp.WithString("path", mcp.Required()), readOnly("Read a file (structured)")),
		p.logged(p.structuredFile))
	s.AddTool(mcp.NewTool("clock", mcp.WithDescription("The current UTC time, RFC 3339."), readOnly("Clock")),
		p.logged(func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(time.Now().UTC().Format(time.RFC3339)), nil
		}))
	s.AddTool(mcp.NewTool("counter", mcp.WithDescription("Counts calls per name: count=N."),
		mcp.WithString("name", mcp.Required()), readOnly("Counter")),
		p.logged(p.counter))
	s.AddTool(mcp.NewTool("big", mcp.WithDescription("Returns kib KiB of text."),
		mcp.WithNumber("kib", mcp.Required()), readOnly("Big output")),
		p.logged(func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			kib := req.GetInt("kib", 1)
			return mcp.NewToolResultText(strings.Repeat("x", kib*1024)), nil
		}))
	s.AddTool(mcp.NewTool("fail", mcp.WithDescription("Returns an isError result."),
		mcp.WithString("message"), readOnly("Fail")),
		p.logged(func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError(req.GetString("message", "probe failed")), nil
		}))
	s.AddTool(mcp.NewTool("hang", mcp.WithDescription("Never answers."), readOnly("Hang")),
		p.logged(func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}))
	s.AddTool(mcp.NewTool("delete_file", mcp.WithDescription("Delete a file."),
		mcp.WithString("path", mcp.Required(), mcp.Description("file to delete")), destructive("Delete a file")),
		p.logged(p.deleteFile))
}

// destructive annotates a tool that deletes or overwrites.
func destructive(title string) mcp.ToolOption {
	return mcp.WithToolAnnotation(mcp.ToolAnnotation{
		Title:           title,
		ReadOnlyHint:    mcp.ToBoolPtr(false),
		DestructiveHint: mcp.ToBoolPtr(true),
		IdempotentHint:  mcp.ToBoolPtr(true),
		OpenWorldHint:   mcp.ToBoolPtr(false),
	})
}

func (p *probe) deleteFile(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	err := os.Remove(req.GetString("path", ""))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText("deleted"), nil
}

// logged appends the call to the call log before running h.
func (p *probe) logged(h server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if p.callLog != "" {
			args, _ := json.Marshal(req.Params.Arguments)
			line := fmt.Sprintf("%s %s\n", req.Params.Name, args)
			f, err := os.OpenFile(p.callLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				_, _ = f.WriteString(line)
				_ = f.Close()
			}
			p.logTrace(req)
		}
		return h(ctx, req)
	}
}

// logTrace appends the call's _meta traceparent, when it has one, to the
// call log's .trace file.
func (p *probe) logTrace(req mcp.CallToolRequest) {
	if req.Params.Meta == nil {
		return
	}
	tp, _ := req.Params.Meta.AdditionalFields["traceparent"].(string)
	if tp == "" {
		return
	}
	f, err := os.OpenFile(p.callLog+".trace", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, _ = fmt.Fprintf(f, "%s %s\n", req.Params.Name, tp)
		_ = f.Close()
	}
}

func readText(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return string(b), err
}

func (p *probe) readFile(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text, err := readText(req.GetString("path", ""))
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText(text), nil
}

func (p *probe) structuredFile(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text, err := readText(req.GetString("path", ""))
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultStructuredOnly(map[string]any{"content": text}), nil
}

func (p *probe) counter(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name := req.GetString("name", "")
	p.mu.Lock()
	p.counters[name]++
	n := p.counters[name]
	p.mu.Unlock()
	return mcp.NewToolResultText(fmt.Sprintf("count=%d", n)), nil
}
