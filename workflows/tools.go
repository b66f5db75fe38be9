package workflows

import "strings"

// The names of durawait's own MCP tools: the one place they are spelt.
// Everything else (the front end's tool table, the search attribute
// DurawaitTool, the "wait ended" line, `durawait waits`, the config's
// opt-in tools) uses these.
const (
	ToolWaitFor      = "wait_for"
	ToolStartAgent   = "start_agent"
	ToolWaitAgent    = "wait_agent"
	ToolCancelAgent  = "cancel_agent"
	ToolListAgents   = "list_agents"
	ToolListPanes    = "list_panes"
	ToolWaitForText  = "wait_for_text"
	ToolWaitForEvent = "wait_for_event"
	ToolPostEvent    = "post_event"
)

// OwnTools are durawait's own tools, in the order they are listed.
func OwnTools() []string {
	return []string{ToolWaitFor, ToolStartAgent, ToolWaitAgent, ToolCancelAgent, ToolListAgents, ToolListPanes, ToolWaitForText, ToolWaitForEvent, ToolPostEvent}
}

// ToolOfWorkflowType is the tool that starts a workflow of the given type
// (an agent invocation's is start_agent; wait_agent waits on it), or ""
// for a workflow no tool starts (the catalog, a host's lease). A
// re-exposed downstream call's workflow names no one tool: "".
func ToolOfWorkflowType(workflowType string) string {
	switch workflowType {
	case WaitForWorkflowName:
		return ToolWaitFor
	case WaitForTextWorkflowName:
		return ToolWaitForText
	case AgentWorkflowName:
		return ToolStartAgent
	case ListPanesWorkflowName:
		return ToolListPanes
	case WaitForEventWorkflowName:
		return ToolWaitForEvent
	case EventLatchWorkflowName:
		return ToolPostEvent
	}
	return ""
}

// ToolOfWorkflowID is the tool that started the workflow of id, from the
// ID's kind (ids.go), or "" when no tool starts workflows of that kind.
func ToolOfWorkflowID(id string) string {
	switch {
	case strings.HasPrefix(id, WaitForEventIDPrefix):
		return ToolWaitForEvent
	case strings.HasPrefix(id, EventIDPrefix):
		return ToolPostEvent
	case strings.HasPrefix(id, WaitForTextIDPrefix):
		return ToolWaitForText
	case strings.HasPrefix(id, WaitForIDPrefix):
		return ToolWaitFor
	case strings.HasPrefix(id, AgentIDPrefix):
		return ToolStartAgent
	case strings.HasPrefix(id, ListPanesIDPrefix):
		return ToolListPanes
	}
	return ""
}
