// Package waits is the operator's view of durawait's waits: `durawait
// waits list`, `show` and `cancel`, against the embedded engine or a
// Temporal cluster. It reads Temporal's visibility store (the search
// attributes of attrs.go and the execution status), a wait's history, and
// cancels a wait under an identity that names the operator.
package waits

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/durawait/durawait/workflows"
)

// Wait is one row of `durawait waits list`.
type Wait struct {
	ID    string `json:"id"`
	RunID string `json:"run_id"`
	Tool  string `json:"tool"`
	// State is AttrState when the workflow carries it, else its Temporal
	// status in lower case (running, completed, canceled, ...).
	State   string     `json:"state"`
	Caller  string     `json:"caller,omitempty"`
	Started time.Time  `json:"started"`
	Closed  *time.Time `json:"closed,omitempty"`
	// Target is what the wait waits for (AttrTarget), in one short line.
	Target  string `json:"target,omitempty"`
	Summary string `json:"summary,omitempty"`
}

// ListOptions filter `durawait waits list`.
type ListOptions struct {
	// Running keeps the waits that run now (ExecutionStatus = 'Running').
	Running bool
	// Tool keeps one tool's waits (AttrTool).
	Tool string
	// Caller keeps one caller's waits (AttrCaller).
	Caller string
	// State keeps the waits in one state (AttrState: one of States).
	State string
	// Since keeps the waits started at or after it (zero: any).
	Since time.Time
	// Limit bounds the rows, in the visibility store's order (see List);
	// 0 is DefaultLimit.
	Limit int
}

// DefaultLimit is how many waits list shows unless told otherwise.
const DefaultLimit = 50

// Query builds the visibility query of opts, on the search attributes
// every namespace durawait runs on has (registered at boot on the embedded
// engine, required at start on a cluster). notes say how a --tool was read.
// Without --tool only the wait workflows (wait_for, wait_for_text, agent
// invocations) are listed: durawait's internal ones (the catalog, a split
// front end's downstream calls and list_panes) only when asked for by tool.
func Query(opts ListOptions) (query string, notes []string) {
	var terms []string
	if opts.Running {
		terms = append(terms, "ExecutionStatus = 'Running'")
	}
	switch tool := opts.Tool; {
	case tool == "":
		terms = append(terms, waitTypesTerm())
	case tool == workflows.ToolWaitAgent:
		// wait_agent waits on an invocation start_agent started; the
		// invocation's workflow carries start_agent.
		terms = append(terms, fmt.Sprintf("%s = %s", AttrTool, quote(workflows.ToolStartAgent)))
		notes = append(notes, "--tool wait_agent: agent invocations carry DurawaitTool start_agent (wait_agent waits on them); listing those")
	default:
		terms = append(terms, fmt.Sprintf("%s = %s", AttrTool, quote(tool)))
		if !slices.Contains(toolsWithWorkflows(), tool) {
			notes = append(notes, fmt.Sprintf("--tool %s is not one of durawait's own tools (%s): only calls of a re-exposed downstream tool of that name match", tool, strings.Join(toolsWithWorkflows(), ", ")))
		}
	}
	if opts.Caller != "" {
		terms = append(terms, fmt.Sprintf("%s = %s", AttrCaller, quote(opts.Caller)))
	}
	if opts.State != "" {
		terms = append(terms, fmt.Sprintf("%s = %s", AttrState, quote(opts.State)))
	}
	if !opts.Since.IsZero() {
		terms = append(terms, fmt.Sprintf("StartTime >= %s", quote(opts.Since.UTC().Format(time.RFC3339Nano))))
	}
	return strings.Join(terms, " AND "), notes
}

// States are the states a wait can be in (AttrState), which --state takes.
func States() []string {
	return []string{string(workflows.StateRunning), string(workflows.StateMatched), string(workflows.StateSettled),
		string(workflows.StateTimeout), string(workflows.StateFailed), string(workflows.StateCancelled), string(workflows.StateError),
		string(workflows.StateExpired)}
}

// waitWorkflowTypes are the workflow types of the waits `waits list`
// shows without --tool: not the catalog, nor a split front end's
// short-lived downstream-call and list_panes workflows (--tool names
// those). An event's latch is listed with the waits: it holds the event's
// posts, as tool post_event.
var waitWorkflowTypes = []string{workflows.WaitForWorkflowName, workflows.WaitForTextWorkflowName, workflows.AgentWorkflowName,
	workflows.WaitForEventWorkflowName, workflows.EventLatchWorkflowName}

// waitTypesTerm keeps the wait workflows: WorkflowType IN (...).
func waitTypesTerm() string {
	quoted := make([]string, len(waitWorkflowTypes))
	for i, t := range waitWorkflowTypes {
		quoted[i] = quote(t)
	}
	return fmt.Sprintf("WorkflowType IN (%s)", strings.Join(quoted, ", "))
}

// toolsWithWorkflows are durawait's own tools whose calls --tool finds:
// every one that starts or waits on a workflow.
func toolsWithWorkflows() []string {
	return []string{workflows.ToolListPanes, workflows.ToolPostEvent, workflows.ToolStartAgent, workflows.ToolWaitAgent, workflows.ToolWaitFor,
		workflows.ToolWaitForEvent, workflows.ToolWaitForText}
}

// quote is a string literal of Temporal's visibility query language.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// List finds the waits that opts select, with their summaries, in the
// visibility store's order: the embedded engine's SQL visibility lists the
// running waits first (newest first), then the closed ones by close time,
// newest first; Elasticsearch visibility (a cluster) orders by start time,
// newest first. notes say how a --tool was read.
func List(ctx context.Context, c client.Client, namespace string, opts ListOptions) ([]Wait, []string, error) {
	query, notes := Query(opts)
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	var infos []*workflowpb.WorkflowExecutionInfo
	var token []byte
	for len(infos) < limit {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: namespace, Query: query, PageSize: int32(min(limit-len(infos), 1000)), NextPageToken: token,
		})
		if err != nil {
			return nil, notes, fmt.Errorf("list waits (query %q; the namespace needs durawait's search attributes, docs/temporal-ui.md): %w", query, err)
		}
		infos = append(infos, resp.GetExecutions()...)
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	if len(infos) > limit {
		infos = infos[:limit]
	}
	out := make([]Wait, len(infos))
	for i, info := range infos {
		out[i] = waitOf(info)
	}
	summaries(ctx, c, out)
	return out, notes, nil
}

// waitOf is the row of one execution.
func waitOf(info *workflowpb.WorkflowExecutionInfo) Wait {
	attrs := keywords(info.GetSearchAttributes())
	w := Wait{
		ID:      info.GetExecution().GetWorkflowId(),
		RunID:   info.GetExecution().GetRunId(),
		Tool:    attrs[AttrTool],
		State:   attrs[AttrState],
		Caller:  attrs[AttrCaller],
		Target:  attrs[AttrTarget],
		Started: info.GetStartTime().AsTime(),
	}
	if w.Tool == "" {
		w.Tool = toolOfID(w.ID)
	}
	if w.State == "" {
		w.State = statusName(info.GetStatus())
	}
	if w.Caller == "" {
		// The memo's principal (written for authenticated callers).
		if p, ok := decode(info.GetMemo().GetFields()["principal"]).(string); ok {
			w.Caller = p
		}
	}
	if info.GetCloseTime() != nil {
		t := info.GetCloseTime().AsTime()
		w.Closed = &t
	}
	return w
}

// summaries fills each wait's summary (the workflow's static summary,
// which only DescribeWorkflowExecution returns), a few at a time.
func summaries(ctx context.Context, c client.Client, ws []Wait) {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range ws {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			d, err := c.DescribeWorkflowExecution(ctx, ws[i].ID, ws[i].RunID)
			if err != nil {
				return
			}
			if s, ok := decode(d.GetExecutionConfig().GetUserMetadata().GetSummary()).(string); ok {
				ws[i].Summary = s
			}
		})
	}
	wg.Wait()
}

// statusName is a Temporal execution status in lower case ("running").
func statusName(s enumspb.WorkflowExecutionStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_"))
}

// keywords decodes the string-valued search attributes.
func keywords(sa *commonpb.SearchAttributes) map[string]string {
	out := map[string]string{}
	for name, p := range sa.GetIndexedFields() {
		switch v := decode(p).(type) {
		case string:
			out[name] = v
		case []any:
			if len(v) == 1 {
				if s, ok := v[0].(string); ok {
					out[name] = s
				}
			}
		}
	}
	return out
}

// decode is a payload's value (JSON decoded), nil for none; a payload the
// default converter cannot read is described by its encoding.
func decode(p *commonpb.Payload) any {
	if p == nil {
		return nil
	}
	var v any
	if err := converter.GetDefaultDataConverter().FromPayload(p, &v); err != nil {
		return fmt.Sprintf("<%s payload, %d bytes>", p.GetMetadata()["encoding"], len(p.GetData()))
	}
	return v
}

// decodeAll decodes each payload; one payload is returned as itself.
func decodeAll(ps *commonpb.Payloads) any {
	items := ps.GetPayloads()
	switch len(items) {
	case 0:
		return nil
	case 1:
		return decode(items[0])
	}
	out := make([]any, len(items))
	for i, p := range items {
		out[i] = decode(p)
	}
	return out
}

// asJSON is v as indented JSON, for the table view.
func asJSON(v any) string {
	b, err := json.MarshalIndent(v, "  ", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
