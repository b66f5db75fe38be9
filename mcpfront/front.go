// Package mcpfront is durawait's tools: what each of its MCP tools is
// (ownTools, the one table of them), the parsing of their arguments into
// domain types, starting and attaching to the workflows behind each wait,
// progress, results, tasks, and the re-exposed downstream tools; and what
// every call gets around its handler (drain, tool-call events and wait log
// lines, telemetry), read from the tool's table entry.
//
// The MCP wire (transports, sessions, the JSON-RPC envelope) is package
// mcpwire's: Served hands it this package's mcp-go server.
//
// The files build on each other, never back: options.go and the helpers
// at the bottom, front.go (the Front and the shape of a tool), the
// middleware, the handlers, tasks.go and tools.go (the table), and
// server.go (New and the tool list) at the top.
package mcpfront

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/attribute"
	"go.temporal.io/sdk/temporal"

	"github.com/durawait/durawait/internal/samplehub"
)

// Front is durawait's tools: their mcp-go server (Served hands it to the
// MCP wire) and what their handlers share.
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
	tools toolTable
	// posts tells the wait_for_event calls of this front the posts it
	// takes that end their waits (workflows.EventAnswered).
	posts *samplehub.Hub
}

func (f *Front) catalog() *catalog {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cat
}

// toolSpec describes one of durawait's own tools: what it is to MCP (its
// definition), when this front serves it, its handler, and what the
// middleware around every handler (drain, call events, telemetry) and
// the task methods read of it. ownTools is the one table of them: adding
// a tool is one spec and one handler.
type toolSpec struct {
	// name is the tool's name (workflows.Tool*); title and description
	// its definition's (describe, when set, builds the description from
	// the front's options).
	name, title, description string
	describe                 func(*Front) string
	// input and output are the tool's JSON schemas.
	input, output []byte
	// The tool's annotations, all four always set.
	readOnly, destructive, idempotent, openWorld bool

	// served reports whether this front, with the workers' catalog cat,
	// lists the tool; nil: always.
	served func(f *Front, cat *catalog) bool
	// handle answers a call.
	handle func(*Front, context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)

	// wait marks a call that waits: it counts in the wait metrics
	// (started, ended, in flight, duration).
	wait bool
	// startsWait marks a call that starts, attaches to or waits on a wait
	// workflow: its started event waits for the wait's ID (noteWait), it
	// writes the wait log lines, and its wait_start is counted.
	startsWait bool
	// idPrefix is, for a task tool, the kind of the workflow IDs whose
	// runs are its tasks (workflows' *IDPrefix): tasks/get and the like
	// find the tool of a task ID by it.
	idPrefix string

	// task marks a tool that runs as a 2025-11-25 task when asked to.
	task bool
	// prepare parses a task-augmented call into the shared wait it starts
	// or attaches to; nil: the tool's tasks are made otherwise (wait_agent).
	prepare func(*Front, context.Context, mcp.CallToolRequest) (sharedWait, *mcp.CallToolResult)
	// taskHolds marks a wait that a plain caller's hang-up would cancel
	// (wait_for_text): its task holds it until the run closes.
	taskHolds bool
	// runAnswer shapes the result of a closed run of the tool's workflow
	// as the tool's answer (a task's result).
	runAnswer func(*Front, context.Context, taskRef) *mcp.CallToolResult

	// resultAttributes are a call's span attributes read from its
	// structured result, and its outcome ("" when the result names none).
	// The attributes of its arguments come from its handler, once parsed
	// (noteAttributes).
	resultAttributes func(structured any) ([]attribute.KeyValue, string)
}

// toolTable is durawait's own tools (ownTools) by name.
type toolTable map[string]*toolSpec

// of is the spec of the tool called name; a re-exposed downstream tool's
// is a spec with its name alone (it waits on nothing, runs as no task).
func (t toolTable) of(name string) *toolSpec {
	if s, ok := t[name]; ok {
		return s
	}
	return &toolSpec{name: name}
}

// ofWorkflow is the spec of the task tool whose workflows' IDs are of the
// kind of id (a wait_agent task is a wait on an agent/ run), or nil.
func (t toolTable) ofWorkflow(id string) *toolSpec {
	for _, s := range t {
		if s.task && s.idPrefix != "" && len(id) > len(s.idPrefix) && id[:len(s.idPrefix)] == s.idPrefix {
			return s
		}
	}
	return nil
}

// sharedWait is a wait that identical calls share: wait_for and
// wait_for_text run one workflow per wait, whose ID is derived from what it
// waits for. A call starts, attaches to and answers from it in five steps,
// each closing a gap:
//
//  1. Subscribe before the start (subscribe). The call subscribes to the
//     wait's in-process events (Options.Events) before it starts the
//     workflow, so nothing the activity tells after the start is missed,
//     not even an outcome known at once.
//  2. Let a settling run close (waitSettled). A run whose outcome an
//     earlier call already returned from the feed (step 4) may still be
//     open for a moment; attaching to it would answer with that finished
//     wait's outcome. So the call first waits, at most settleTimeout, for
//     that run to close.
//  3. Start, or attach while it runs (start): conflict policy USE_EXISTING
//     attaches to the running wait, reuse policy ALLOW_DUPLICATE starts a
//     new run after a closed one.
//  4. Answer from whichever comes first (awaitOutcome): an outcome event
//     from the feed, an early answer without Temporal's round trip (the
//     workflow records that same outcome durably), or Temporal's result of
//     the run. Other events become progress notifications meanwhile.
//  5. Settle (settle). A call that answered from the feed records the run as
//     settling until Temporal closes it: that record is what step 2 waits
//     on.
//
// startOrAttach does steps 1 to 3, awaitOutcome steps 4 and 5. Without a
// feed (a front with no worker in its process) steps 1, 4's early answer and
// 5 do nothing; a task-augmented call (createTask) does steps 2 and 3 only.
type sharedWait struct {
	id      string
	summary string
	details string
	memo    map[string]any
	// attrs are the search attributes the workflow starts with (an
	// attaching call's are ignored: the first call's stay).
	attrs    temporal.SearchAttributes
	workflow string
	input    any
	// pollMs is how often a task's status is worth asking for.
	pollMs int64
	// bound is the wait's own bound (max_wait_sec): its run has closed by
	// then and LoopGrace.
	bound time.Duration
	// maxWaitSec is bound in the seconds a wait_for's answer names
	// (effective_max_wait_sec).
	maxWaitSec int
	// feed, when set, is where the wait's in-process events come from
	// instead of Options.Events (a wait_for_event's: the posts this front
	// takes).
	feed EventFeed
	// noLoop marks a wait with no loop on a host (wait_for_event): no host
	// is told to expect one.
	noLoop bool
}

// taskRef names what a task is: a workflow run, or an update of one.
type taskRef struct {
	workflowID, runID, updateID string
}

// String is the task ID: "<workflow ID>@<run ID>" or "<workflow ID>#<update ID>".
func (r taskRef) String() string {
	if r.updateID != "" {
		return r.workflowID + "#" + r.updateID
	}
	return r.workflowID + "@" + r.runID
}
