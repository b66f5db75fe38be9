package mcpfront

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"sort"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/durawait/durawait/internal/samplehub"
	"github.com/durawait/durawait/mcpwire"
	"github.com/durawait/durawait/workflows"
)

const instructions = `durawait gives you waits that end the moment the thing you wait for happens, instead of blind sleeps.
Use wait_for to poll a downstream MCP tool (the probe) until its output matches a regex, stops matching, or stays unchanged.
Use wait_for_event to wait for another agent's post_event or a system's webhook, and post_event to release a waiting agent.
Waits are durable: if your tool call is cut off, call again with the same arguments to pick up the same wait.`

// New builds the MCP server and its tool list.
func New(opts Options) *Front {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	f := &Front{opts: opts, drain: newDrain(), starts: newStarter(opts.Starts), tools: newToolTable(), posts: samplehub.New()}
	f.closes = newCloses(opts.Temporal, opts.Namespace, opts.Logger)
	f.mcp = server.NewMCPServer("durawait", opts.Version,
		server.WithToolCapabilities(true),
		// Tasks are answered from Temporal by handleOwn, never by mcp-go.
		server.WithTaskCapabilities(true, true, true),
		// And the tasks extension of 2026-07-28, by handleModern.
		tasksExtension(),
		server.WithInstructions(instructions),
		// logging/setLevel is the wire's (per session); the messages are
		// the front's (tellCaller).
		server.WithLogging(),
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
		if s := f.tools.of(name); s.served == nil || s.served(f, cat) {
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
