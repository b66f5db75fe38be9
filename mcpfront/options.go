package mcpfront

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"

	"github.com/durawait/durawait/internal/callevents"
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
	// ExpectLoop, when set with Host, is told each wait this front starts
	// on Host (not one it attaches to), as soon as Temporal took the start: the
	// host's restart then finds its loop even before visibility lists the
	// wait (hosting.Runtime.ExpectLoop).
	ExpectLoop func(workflowID, runID string)
	// HideProbeArgValues shows a wait_for's probe arguments by name only
	// (name=…) wherever operators read them: its target (DurawaitTarget,
	// /events, spans, log lines), summary, details and memo. The workflow's
	// input in its history still holds them (docs/temporal-ui.md).
	HideProbeArgValues bool
	// Agents configures the agent tools; they are listed when providers are
	// configured.
	Agents AgentOptions
	// Tmux configures the opt-in tmux tools.
	Tmux TmuxOptions
	// EventOptions configure the events (wait_for_event, post_event and the
	// hook endpoint).
	EventOptions EventOptions
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

// AgentOptions configure the agent tools; without providers they are not
// listed.
type AgentOptions struct {
	Limits     workflows.AgentLimits
	WaitWindow time.Duration
	MaxRun     time.Duration
	// AnswerWait is how long an invocation whose CLI exited stays open
	// for a blocker's answer (agents.answer_wait_sec).
	AnswerWait time.Duration
	// CancelWait bounds how long cancel_agent waits for the CLI to stop.
	CancelWait time.Duration
}

func (o AgentOptions) enabled() bool { return len(o.Limits.Providers) > 0 }

// TmuxOptions configure the opt-in tmux tools.
type TmuxOptions struct {
	ListPanes, WaitForText bool
	// Socket selects the tmux server on the workers' tmux host; empty is
	// the default socket of the user the worker runs as.
	Socket string
	// MaxWait is wait_for_text's server-side bound.
	MaxWait time.Duration
}

// CallEventOptions configure the per-call log lines and tool-call events.
type CallEventOptions struct {
	// Hub receives the tool-call events of GET /events; nil publishes none
	// (the log lines are written regardless).
	Hub *callevents.Hub
	// ResultMaxLength is tool_result_max_length: results in events are cut
	// to this many characters; 0 or less is callevents.DefaultResultMaxLength.
	ResultMaxLength int
	// Heartbeat is how often an idle stream sends a comment, and how
	// often a stream's credentials are checked again; 0 is
	// callevents.DefaultHeartbeat.
	Heartbeat time.Duration
}

// Telemetry is the front's OpenTelemetry instrumentation: one span per tool
// call and the wait metrics. The zero value records nothing.
type Telemetry struct {
	// TracerProvider records the tool-call spans; nil records none.
	TracerProvider trace.TracerProvider
	// MeterProvider records the wait metrics; nil records none.
	MeterProvider metric.MeterProvider
	// Propagator reads W3C trace context from a request's _meta
	// (traceparent, tracestate, baggage); nil reads none.
	Propagator propagation.TextMapPropagator
}
