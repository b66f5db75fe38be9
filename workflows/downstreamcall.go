package workflows

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Names of the workflow and activity behind one call of a re-exposed
// downstream tool.
const (
	CallDownstreamToolWorkflowName = "CallDownstreamTool"
	CallDownstreamToolActivityName = "CallDownstreamTool"
	// ErrTypeNotExposed: the worker refuses a call of a server not
	// configured with expose = true there.
	ErrTypeNotExposed = "NotExposed"
)

// DownstreamCallTimeout bounds one call of a re-exposed downstream tool.
const DownstreamCallTimeout = 5 * time.Minute

// MaxDownstreamResultBytes bounds the result of a re-exposed downstream
// tool that durawait passes on: bytes of the result's JSON. A result
// travels in a Temporal payload (through a split front end), whose blob
// limit is 2 MiB, and into a model's context; past this it is replaced by an
// isError result naming the limit.
const MaxDownstreamResultBytes = 1 << 20

// DownstreamCallHeartbeatTimeout is how long a call's worker may go
// unheard; the call heartbeats well within it, so a caller's cancel
// reaches the downstream call within a few seconds.
const DownstreamCallHeartbeatTimeout = 5 * time.Second

// DownstreamCall is one call of a re-exposed downstream tool.
type DownstreamCall struct {
	// Server and Tool name the downstream tool (the tool's own name, not
	// the name durawait exposes it under).
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Arguments are the caller's arguments, as sent.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// DownstreamCallResult is the answer of a re-exposed call: the MCP
// CallToolResult as JSON. A failure of the downstream server is an isError
// result naming it, not an error.
type DownstreamCallResult struct {
	Result json.RawMessage `json:"result"`
}

// DownstreamCallStartTimeout bounds how long a call waits for a worker to
// take it.
const DownstreamCallStartTimeout = 10 * time.Second

// DownstreamCallWorkflowTimeout bounds a CallDownstreamTool workflow: the
// call's own bound plus a minute for a worker to take it.
const DownstreamCallWorkflowTimeout = DownstreamCallTimeout + time.Minute

// CallDownstreamTool runs one call of a re-exposed downstream tool on a
// worker that is connected to the server. It is never retried: a tool call
// is not idempotent.
func CallDownstreamTool(ctx workflow.Context, in DownstreamCall) (DownstreamCallResult, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// A worker that took the workflow task is up; one that cannot take
		// the call at once (none connected to the server on this queue) is
		// answered quickly rather than at the call's bound.
		ScheduleToStartTimeout: DownstreamCallStartTimeout,
		StartToCloseTimeout:    DownstreamCallTimeout,
		HeartbeatTimeout:       DownstreamCallHeartbeatTimeout,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var out DownstreamCallResult
	err := workflow.ExecuteActivity(actx, CallDownstreamToolActivityName, in).Get(ctx, &out)
	return out, err
}
