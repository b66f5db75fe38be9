// Package mcpfront is durawait's MCP face: the tool definitions and their
// schemas, the parsing of tool arguments into domain types, starting and
// attaching to the workflows behind each wait, progress notifications,
// result shaping, and the re-exposed downstream tools.
package mcpfront

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.temporal.io/sdk/client"

	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

// EventFeed delivers, in process, what running waits observe (see
// workflows.WaitEvent). Subscribe returns a channel of one workflow's events
// and a function that ends the subscription and closes the channel.
type EventFeed interface {
	Subscribe(workflowID string) (<-chan workflows.WaitEvent, func())
}

// Options configure a Front.
type Options struct {
	// Temporal starts and attaches to the workflows.
	Temporal client.Client
	// Namespace of the workflows.
	Namespace string
	// TaskQueue the workers poll.
	TaskQueue string
	// Workers run every side effect behind a tool and publish the
	// downstream catalog; nil is no worker (only durawait's own tools).
	Workers Workers
	// Events, when set, feeds progress notifications and early answers.
	Events EventFeed
	// Host is the host of the worker in this process, when there is one
	// (durawait serve): the waits this front starts run their loops there,
	// with no host to pick.
	Host string
	// Agents configures the agent tools; they are listed when providers are
	// configured.
	Agents AgentOptions
	// Tmux configures the opt-in tmux tools.
	Tmux TmuxOptions
	// CallEvents configures the tool-call events and the wait log lines.
	CallEvents CallEventOptions
	Logger     *slog.Logger
	// Version is reported to MCP clients.
	Version string
	// Telemetry records a span per tool call and the wait metrics.
	Telemetry Telemetry
	// Starts bound how workflow starts meet a busy engine.
	Starts StartOptions
}

// Front is the MCP server.
type Front struct {
	opts Options
	mcp  *server.MCPServer
	// starts queues and retries workflow starts.
	starts *starter

	mu  sync.Mutex
	cat *catalog
	// listed is the JSON of the tool definitions last set.
	listed string
	// catalogUnreadable is set while the workers' catalog cannot be read.
	catalogUnreadable atomic.Bool

	// ttlOnce reads ttl, the retention of closed tasks, once.
	ttlOnce sync.Once
	ttl     time.Duration
	// drain ends the calls in flight on shutdown (see Drain).
	drain *drain

	// settling holds the runs (by workflow ID) whose outcome a call already
	// returned from the in-process feed, until Temporal closes them.
	settling sync.Map
	// closes tells the calls of a front with a feed when their runs close.
	closes *closes
	// attached counts the callers attached to each wait_for_text wait.
	attached holds
	// clients are the names of the sessions' clients (DurawaitClient).
	clients clientNames
	// taskTel holds the instrumentation of task-augmented calls, by tool
	// (a *toolTelemetry, or nil when nothing is recorded).
	taskTel sync.Map
	// tools are durawait's own tools (ownTools), by name.
	tools tools
}

const instructions = `durawait gives you waits that end the moment the thing you wait for happens, instead of blind sleeps.
Use wait_for to poll a downstream MCP tool (the probe) until its output matches a regex, stops matching, or stays unchanged.
Waits are durable: if your tool call is cut off, call again with the same arguments to pick up the same wait.`

// New builds the MCP server and its tool list.
func New(opts Options) *Front {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	f := &Front{opts: opts, drain: newDrain(), starts: newStarter(opts.Starts), tools: newTools()}
	f.closes = newCloses(opts.Temporal, opts.Namespace, opts.Logger)
	f.mcp = server.NewMCPServer("durawait", opts.Version,
		server.WithToolCapabilities(true),
		// Tasks are answered from Temporal by handleOwn, never by mcp-go.
		server.WithTaskCapabilities(true, true, true),
		server.WithInstructions(instructions),
		server.WithRecovery(),
		server.WithToolHandlerMiddleware(mcpwire.ArgumentsGuard),
		server.WithHooks(f.clients.hooks()),
	)
	f.Refresh(context.Background())
	return f
}

// Served is what the MCP wire (package mcpwire) carries calls to: the
// tools' mcp-go server, and the task requests the front answers itself.
func (f *Front) Served() mcpwire.Served {
	return mcpwire.Served{MCP: f.mcp, Own: f.handleOwn, Logger: f.opts.Logger}
}

// refreshTimeout bounds one read of the workers' catalog.
const refreshTimeout = 5 * time.Second

// Refresh rebuilds the tool list from the workers' current catalog. Call it
// whenever a worker's catalog changes (or poll: see WatchCatalog). While no
// catalog can be read, the tool list stays as it was (at first: only
// durawait's own tools); the first failure and the recovery are logged. The
// clients are told of a new tool list only when it changed.
func (f *Front) Refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	var src workflows.DownstreamCatalog
	if f.opts.Workers != nil {
		var err error
		src, err = f.opts.Workers.Catalog(ctx)
		if err != nil {
			if !f.catalogUnreadable.Swap(true) {
				f.opts.Logger.Warn("the workers' downstream catalog cannot be read (is a worker running on the task queue?); the tool list stays as it was", "error", err)
			}
			if f.catalog() != nil {
				return
			}
			src = workflows.DownstreamCatalog{}
		} else if f.catalogUnreadable.Swap(false) {
			f.opts.Logger.Info("the workers' downstream catalog is readable again")
		}
	}
	f.mu.Lock()
	if f.cat != nil && reflect.DeepEqual(f.cat.source, src) {
		f.mu.Unlock()
		return
	}
	// durawait's own tools cannot be probed, and a downstream tool of the
	// same name is exposed as <server>.<tool>.
	cat := newCatalog(src, workflows.OwnTools())
	f.cat = cat
	f.mu.Unlock()
	for _, bad := range cat.undecodable {
		f.opts.Logger.Warn("a downstream tool of the workers' catalog could not be read; it is not listed", "tool", bad)
	}

	var tools []server.ServerTool
	for _, name := range workflows.OwnTools() {
		if s := f.tools.of(name); s.served == nil || s.served(f) {
			tools = append(tools, s.serverTool(f))
		}
	}
	names := make([]string, 0, len(cat.exposed))
	for name := range cat.exposed {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ref := cat.exposed[name]
		tools = append(tools, server.ServerTool{Tool: proxyTool(name, ref.Def), Handler: f.middleware(f.tools.of(name), f.proxyHandler(ref))})
	}
	defs := make([]mcp.Tool, len(tools))
	for i, t := range tools {
		defs[i] = t.Tool
	}
	listed, _ := json.Marshal(defs)
	f.mu.Lock()
	same := string(listed) == f.listed
	f.listed = string(listed)
	f.mu.Unlock()
	if same {
		// Only a server's availability changed: the handlers read the
		// new catalog; the clients' tool list is the same.
		return
	}
	f.mcp.SetTools(tools...)
}

// WatchCatalog refreshes the tool list every interval until ctx ends: a
// front end with no worker in its process learns the workers' catalog so.
func (f *Front) WatchCatalog(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			f.Refresh(ctx)
		}
	}
}

// DownstreamStatus reports each downstream server of the workers' catalog
// as "connected" or "unavailable: <last connection error>".
func (f *Front) DownstreamStatus() map[string]string {
	return f.catalog().downstreamStatus()
}

func (f *Front) catalog() *catalog {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cat
}

// proxyTool is a downstream tool's definition under its exposed name.
func proxyTool(name string, def mcp.Tool) mcp.Tool {
	t := def
	t.Name = name
	if t.RawInputSchema == nil && t.InputSchema.Type == "" {
		t.InputSchema = mcp.ToolInputSchema{Type: "object"}
	}
	return t
}

func (f *Front) proxyHandler(ref toolRef) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if bad := oversizedArguments(req); bad != nil {
			return bad, nil
		}
		var onProgress func(mcp.ProgressNotificationParams)
		if token := progressToken(req); token != nil {
			onProgress = func(p mcp.ProgressNotificationParams) { f.forwardProgress(ctx, token, p) }
		}
		if f.opts.Workers == nil {
			return mcp.NewToolResultError("no durawait worker serves downstream MCP tools"), nil
		}
		if f.catalogUnreadable.Load() {
			// No worker answered the last catalog query: a call would wait
			// for one until its bound.
			return mcp.NewToolResultError(fmt.Sprintf("calling %s on downstream MCP server %q failed: no durawait worker answers on task queue %q right now; call again when one runs",
				ref.Def.Name, ref.Server, f.opts.TaskQueue)), nil
		}
		in := workflows.DownstreamCall{Server: ref.Server, Tool: ref.Def.Name}
		if req.Params.Arguments != nil {
			args, err := json.Marshal(req.Params.Arguments)
			if err != nil {
				return mcp.NewToolResultError(fmt.Sprintf("arguments: %v", err)), nil
			}
			in.Arguments = args
		}
		out, err := f.opts.Workers.CallTool(ctx, in, onProgress)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return mcp.NewToolResultError(fmt.Sprintf("calling %s on downstream MCP server %q failed: %s",
				ref.Def.Name, ref.Server, workflowErrorMessage(err))), nil
		}
		res, err := mcp.ParseCallToolResult(&out.Result)
		if err != nil {
			return mcp.NewToolResultError(fmt.Sprintf("calling %s on downstream MCP server %q: the worker's answer is not a tool result: %v",
				ref.Def.Name, ref.Server, err)), nil
		}
		return res, nil
	}
}

// forwardProgress relays a downstream server's progress notification to the
// caller, under the caller's own progress token.
func (f *Front) forwardProgress(ctx context.Context, token mcp.ProgressToken, p mcp.ProgressNotificationParams) {
	params := map[string]any{"progressToken": token, "progress": p.Progress}
	if p.Total != 0 {
		params["total"] = p.Total
	}
	if p.Message != "" {
		params["message"] = p.Message
	}
	if err := f.mcp.SendNotificationToClient(ctx, "notifications/progress", params); err != nil {
		f.opts.Logger.Debug("downstream progress notification not forwarded", "error", err)
	}
}
