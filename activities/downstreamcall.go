package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/internal/probepolicy"
	"github.com/durawait/durawait/workflows"
)

// DownstreamServers are the downstream MCP servers a worker is connected
// to. The worker's connection manager implements it.
type DownstreamServers interface {
	// ServerNames lists the configured servers in configuration order.
	ServerNames() []string
	// ServerTools returns a server's tools as last listed, its expose
	// setting, and its last connection error (nil while connected).
	ServerTools(server string) (tools []mcp.Tool, expose bool, lastErr error)
	// CallTool forwards one call. When onProgress is not nil, it receives
	// each progress notification the server sends for the call. A server
	// that cannot be reached yields an *UnavailableError.
	CallTool(ctx context.Context, server, tool string, args any, onProgress func(mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error)
}

// Downstream runs the re-exposed downstream tools and describes them: the
// worker side of every re-exposed call and of the tool catalog.
type Downstream struct {
	// Servers are the worker's downstream connections.
	Servers DownstreamServers
	// ProbeTools are, by server name, the tools wait_for may probe beyond
	// the read-only ones (the servers' probe_tools).
	ProbeTools map[string][]string
	// TmuxHostQueue is the task queue of this worker's tmux host; empty
	// when it runs no tmux tools.
	TmuxHostQueue string
}

// CheckProbe checks a probe ("<server>.<tool>") against the worker's probe
// policy (internal/probepolicy): its server is configured here, lists the
// tool, and the tool may be probed. While the server has listed no tools
// (it is down, or not yet connected) the answer is an *UnavailableError:
// the loop skips that sample's call, as it does for a server that is down,
// and checks again at the next.
func (d *Downstream) CheckProbe(probe string) error {
	server, tool, ok := strings.Cut(probe, ".")
	if !ok {
		return fmt.Errorf("probe %q is not of the form <server>.<tool>", probe)
	}
	if !slices.Contains(d.Servers.ServerNames(), server) {
		return fmt.Errorf("probe %s: no downstream MCP server is named %q on this worker", probe, server)
	}
	tools, _, lastErr := d.Servers.ServerTools(server)
	if len(tools) == 0 {
		if lastErr == nil {
			lastErr = errors.New("it has not listed its tools yet")
		}
		return &UnavailableError{Server: server, Err: lastErr}
	}
	for _, def := range tools {
		if def.Name == tool {
			if !probepolicy.Policy(d.ProbeTools).Allows(server, def) {
				return probepolicy.Refusal(server, def)
			}
			return nil
		}
	}
	return fmt.Errorf("probe %s: downstream MCP server %q lists no tool named %q", probe, server, tool)
}

// callHeartbeatInterval is how often a running call heartbeats (the SDK
// sends at most one heartbeat per 0.8 × the heartbeat timeout).
const callHeartbeatInterval = time.Second

// CallDownstreamTool is the activity of a re-exposed call: Call, heartbeating
// while the downstream server works so that a cancel reaches the call.
func (d *Downstream) CallDownstreamTool(ctx context.Context, in workflows.DownstreamCall) (workflows.DownstreamCallResult, error) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		tick := time.NewTicker(callHeartbeatInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return d.Call(ctx, in, nil)
}

// Call forwards one call of a re-exposed tool. A failure of the downstream
// server is an isError result that names the server, so the caller reads
// it as the tool's answer. When onProgress is not nil, it receives each
// progress notification the server sends for the call.
func (d *Downstream) Call(ctx context.Context, in workflows.DownstreamCall, onProgress func(mcp.ProgressNotificationParams)) (workflows.DownstreamCallResult, error) {
	// The front end offers only exposed servers' tools; an input that
	// reached the worker some other way is refused here.
	if _, expose, _ := d.Servers.ServerTools(in.Server); !expose {
		return workflows.DownstreamCallResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"the worker refuses to call %s on downstream MCP server %q: the server is not configured here with expose = true, so none of its tools is re-exposed",
			in.Tool, in.Server), workflows.ErrTypeNotExposed, nil)
	}
	var args any
	if len(in.Arguments) > 0 {
		args = in.Arguments
	}
	// The same bound in process as through Temporal (the activity's
	// start-to-close timeout).
	ctx, cancel := context.WithTimeout(ctx, workflows.DownstreamCallTimeout)
	defer cancel()
	ctx, span := startCallSpan(ctx, "call "+in.Server+"."+in.Tool,
		attribute.String("server", in.Server), attribute.String("tool", in.Tool))
	res, err := d.Servers.CallTool(ctx, in.Server, in.Tool, args, onProgress)
	endCallSpan(span, err, res != nil && res.IsError)
	if err != nil {
		res = mcp.NewToolResultError(callFailure(in, err))
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return workflows.DownstreamCallResult{}, fmt.Errorf("encode the result of %s on downstream MCP server %q: %w", in.Tool, in.Server, err)
	}
	if len(raw) > workflows.MaxDownstreamResultBytes {
		if raw, err = json.Marshal(mcp.NewToolResultError(oversizeResult(in, len(raw)))); err != nil {
			return workflows.DownstreamCallResult{}, fmt.Errorf("encode the result of %s on downstream MCP server %q: %w", in.Tool, in.Server, err)
		}
	}
	return workflows.DownstreamCallResult{Result: raw}, nil
}

// oversizeResult is what a caller reads instead of a result of size bytes,
// over MaxDownstreamResultBytes. The call was made: a tool that changes
// something has changed it, so the message says so rather than "failed".
func oversizeResult(in workflows.DownstreamCall, size int) string {
	return fmt.Sprintf("%s on downstream MCP server %q ran, but its result is %d bytes of JSON, over durawait's limit of %d bytes (%d MiB) "+
		"for a re-exposed tool's result, so it is not passed on; call it again asking for less (a narrower query, a range, a page)",
		in.Tool, in.Server, size, workflows.MaxDownstreamResultBytes, workflows.MaxDownstreamResultBytes>>20)
}

// callFailure is what a caller reads when a downstream call failed.
func callFailure(in workflows.DownstreamCall, err error) string {
	var unavailable *UnavailableError
	if errors.As(err, &unavailable) {
		return err.Error()
	}
	return fmt.Sprintf("calling %s on downstream MCP server %q failed: %v", in.Tool, in.Server, err)
}
