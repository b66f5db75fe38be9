package worker

import (
	"log/slog"
	"sync"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/durawait/durawait/workflows"
)

// endOutcomeError is the "wait ended" outcome of a run that returned an
// error other than a cancellation (a run begun before search attributes
// that completed is workflows.OutcomeCompleted).
const endOutcomeError = string(workflows.StateError)

// WaitEndLogger is a worker interceptor that writes one info line,
// "wait ended", when a wait workflow (WaitFor, WaitForText,
// AgentInvocation) closes: the tool, the wait's ID, the caller, the
// outcome and the duration from the workflow's start. It logs with
// workflow.GetLogger, which skips replay, so a run replayed on another
// worker (or after a cache eviction) does not log its end again, and it
// adds no command to the workflow (no upsert, no activity), so recorded
// histories replay as before. docs/operations.md describes the line.
//
// A run's last workflow task can run twice in one worker: the engine
// refuses a completion that raced a new event (UnhandledCommand), and the
// task runs again with it, not as a replay. The logger remembers the runs
// whose end it logged (the last endMemory of them), so each is logged once
// per process.
type WaitEndLogger struct {
	interceptor.WorkerInterceptorBase

	mu     sync.Mutex
	logged map[string]bool
	order  []string
}

// endMemory is how many logged runs a WaitEndLogger remembers.
const endMemory = 4096

// first reports whether runID's end is logged for the first time here, and
// remembers it.
func (l *WaitEndLogger) first(runID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.logged[runID] {
		return false
	}
	if l.logged == nil {
		l.logged = map[string]bool{}
	}
	l.logged[runID] = true
	l.order = append(l.order, runID)
	if len(l.order) > endMemory {
		delete(l.logged, l.order[0])
		l.order = l.order[1:]
	}
	return true
}

// InterceptWorkflow wraps the wait workflows; the other workflows run as
// they are.
func (l *WaitEndLogger) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	name := workflow.GetInfo(ctx).WorkflowType.Name
	if name != workflows.WaitForWorkflowName && name != workflows.WaitForTextWorkflowName && name != workflows.AgentWorkflowName && name != workflows.WaitForEventWorkflowName {
		return next
	}
	// The tool, should the run carry no DurawaitTool (a run begun before
	// search attributes).
	tool := workflows.ToolOfWorkflowType(name)
	return &waitEndInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, tool: tool, logger: l}
}

type waitEndInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	// tool is the tool of the workflow's type, when DurawaitTool is unset.
	tool   string
	logger *WaitEndLogger
}

// ExecuteWorkflow runs the workflow, then logs its end.
func (w *waitEndInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	out, err := w.Next.ExecuteWorkflow(ctx, in)
	if (err == nil || !workflow.IsContinueAsNewError(err)) && w.logger.first(workflow.GetInfo(ctx).WorkflowExecution.RunID) {
		logWaitEnd(ctx, w.tool, err)
	}
	return out, err
}

// logWaitEnd writes the "wait ended" line of the run of ctx, which
// returned err. It reads the workflow's own record of itself (search
// attributes, start time, workflow clock) and so adds no command.
func logWaitEnd(ctx workflow.Context, tool string, err error) {
	info := workflow.GetInfo(ctx)
	attrs := workflow.GetTypedSearchAttributes(ctx)
	if t, ok := attrs.GetKeyword(workflows.KeyTool); ok && t != "" {
		tool = t
	}
	caller, _ := attrs.GetKeyword(workflows.KeyCaller)
	client, _ := attrs.GetKeyword(workflows.KeyClient)
	session, _ := attrs.GetKeyword(workflows.KeySession)
	state, _ := attrs.GetKeyword(workflows.KeyState)
	outcome := state
	switch {
	case err != nil && temporal.IsCanceledError(err):
		outcome = string(workflows.StateCancelled)
	case err != nil:
		outcome = endOutcomeError
	case outcome == "":
		outcome = workflows.OutcomeCompleted
	}
	took := workflow.Now(ctx).Sub(info.WorkflowStartTime)
	fields := []any{"tool", tool, "wait_id", info.WorkflowExecution.ID, "run_id", info.WorkflowExecution.RunID,
		// A group, as the front's lines have it: caller.principal=… in
		// text, a nested "caller" object in JSON (the SDK's structured
		// logger hands slog attributes to the handler as they are).
		slog.Group("caller", "principal", caller, "client", client, "session", session),
		"outcome", outcome, "duration_ms", took.Milliseconds()}
	if status, ok := attrs.GetKeyword(workflows.KeyAgentStatus); ok && status != "" {
		fields = append(fields, "agent_status", status)
	}
	if err != nil {
		fields = append(fields, "error", err.Error())
	}
	workflow.GetLogger(ctx).Info("wait ended", fields...)
}
