package mcpfront

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/durawait/durawait/workflows"
)

// ownTools is the table of durawait's own tools, in the order they are
// listed (workflows.OwnTools).
func ownTools() []toolSpec {
	return []toolSpec{
		{
			name: workflows.ToolWaitFor, title: "Wait for a probe's condition", description: waitForDescription,
			input: waitForInputSchema, output: waitForOutputSchema,
			readOnly: true, idempotent: true, openWorld: true,
			served: func(_ *Front, cat *catalog) bool { return len(cat.servers) > 0 },
			handle: (*Front).handleWaitFor, wait: true, startsWait: true, idPrefix: workflows.WaitForIDPrefix,
			task: true, prepare: (*Front).prepareWaitFor, runAnswer: (*Front).waitForRunAnswer,
			resultAttributes: waitForResultAttributes,
		},
		{
			name: workflows.ToolStartAgent, title: "Start a sub-agent",
			description: "Start a sub-agent CLI (a configured provider such as claude, codex or gemini) headless on a prompt, and return at once with its invocation_id (status running, reason started). Wait for it with wait_agent; stop it with cancel_agent. session_id resumes an earlier provider session; cwd must lie inside an allowed root. Give a request_id to make the call safe to repeat: the identical call with the same request_id returns the same invocation_id and never starts the CLI again.",
			input:       startAgentInputSchema, output: invocationOutputSchema,
			destructive: true, openWorld: true,
			served: agentsServed, handle: (*Front).handleStartAgent, startsWait: true,
			resultAttributes: invocationResultAttributes,
		},
		{
			name: workflows.ToolWaitAgent, title: "Wait for a subagent invocation", describe: waitAgentDescription,
			input: waitAgentInputSchema, output: waitAgentOutputSchema,
			readOnly: true, idempotent: true,
			served: agentsServed, handle: (*Front).handleWaitAgent, wait: true, startsWait: true, idPrefix: workflows.AgentIDPrefix,
			task: true, runAnswer: (*Front).agentRunAnswer,
			resultAttributes: invocationResultAttributes,
		},
		{
			name: workflows.ToolCancelAgent, title: "Cancel a subagent invocation",
			description: "Stop an agent invocation's CLI (its whole process group: SIGTERM, then SIGKILL after a grace period) and return its payload with status cancelled. Cancelling a finished invocation returns its final payload unchanged.",
			input:       invocationIDInputSchema, output: invocationOutputSchema,
			destructive: true, idempotent: true,
			served: agentsServed, handle: (*Front).handleCancelAgent,
			resultAttributes: invocationResultAttributes,
		},
		{
			name: workflows.ToolListAgents, title: "List subagent invocations",
			description: "List the agent invocations, newest first, with their status, provider, cwd and the start of their prompt.",
			input:       listAgentsInputSchema, output: listAgentsOutputSchema,
			readOnly: true, idempotent: true,
			served: agentsServed, handle: (*Front).handleListAgents,
		},
		{
			name: workflows.ToolListPanes, title: "List tmux panes",
			description: "List the tmux server's panes: paneId (%N), an opaque generation (it changes when the pane is respawned or the server restarts), session, window, index, title, current command, size, and active and dead flags. Pass paneId and generation to wait_for_text.",
			input:       listPanesInputSchema, output: listPanesOutputSchema,
			readOnly: true, idempotent: true, openWorld: true,
			served: func(f *Front, _ *catalog) bool { return f.opts.Tmux.ListPanes },
			handle: (*Front).handleListPanes,
		},
		{
			name:        workflows.ToolWaitForText,
			description: "Wait for a literal UTF-8 string in a captured baseline or subsequent raw output. Event-driven, bounded and cancellable; opens observable control clients. Text is data, not exit-status evidence.",
			input:       waitForTextInputSchema, output: waitForTextOutputSchema,
			readOnly: true, openWorld: true,
			served: func(f *Front, _ *catalog) bool { return f.opts.Tmux.WaitForText },
			handle: (*Front).handleWaitForText, wait: true, startsWait: true, idPrefix: workflows.WaitForTextIDPrefix,
			task: true, prepare: (*Front).prepareWaitForText, taskHolds: true, runAnswer: (*Front).textRunAnswer,
			resultAttributes: textResultAttributes,
		},
		{
			name: workflows.ToolWaitForEvent, title: "Wait for an event", description: waitForEventDescription,
			input: waitForEventInputSchema, output: waitForEventOutputSchema,
			readOnly: true, idempotent: true,
			handle: (*Front).handleWaitForEvent, wait: true, startsWait: true, idPrefix: workflows.WaitForEventIDPrefix,
			task: true, prepare: (*Front).prepareWaitForEvent, runAnswer: (*Front).eventRunAnswer,
			resultAttributes: eventWaitResultAttributes,
		},
		{
			name: workflows.ToolPostEvent, title: "Post an event", description: postEventDescription,
			input: postEventInputSchema, output: postEventOutputSchema,
			handle: (*Front).handlePostEvent, resultAttributes: postResultAttributes,
		},
	}
}

func agentsServed(f *Front, _ *catalog) bool { return f.opts.Agents.enabled() }

// waitAgentDescription is wait_agent's description, which names the
// front's wait window.
func waitAgentDescription(f *Front) string {
	return fmt.Sprintf("Wait for an agent invocation to complete or hit an execution blocker, returning early with the latest reply and its age. Continue waiting by calling again with the same ID.\n\n"+
		"Waits for a fixed window of %s; completion or an explicit CLI execution blocker returns early. Running responses include the latest public reply tail (at most 1000 characters) and its age. "+
		"execution_blocked leaves the CLI running: continue waiting or cancel with the same ID. Each blocker category wakes once per invocation. Ordinary tool failures, transient retries, and silence are not proof the task cannot proceed. "+
		"Finished responses contain the final reply. Wait expiry leaves the invocation running. Call again with the same ID to continue. This is request/response waiting, not a background notification subscription.\n\n"+
		"To wait on several invocations at once, give invocation_ids (at most %d) instead, and a mode: any (the first to finish or hit a blocker), all (every one), first_blocker (the first blocker, or all finished). "+
		"The answer is the deciding invocation's payload, with satisfied and every invocation's payload in invocations.",
		f.opts.Agents.WaitWindow.Round(time.Second), workflows.MaxFanIn)
}

// newToolTable indexes ownTools by name. The table is durawait's own tools,
// workflows.OwnTools, in that order: anything else is a programming error,
// and panics at once (TestTheToolTableIsDurawaitsOwnTools).
func newToolTable() toolTable {
	specs := ownTools()
	names := workflows.OwnTools()
	t := make(toolTable, len(specs))
	for i := range specs {
		if i >= len(names) || specs[i].name != names[i] || specs[i].handle == nil {
			panic(fmt.Sprintf("mcpfront: ownTools()[%d] is %q, workflows.OwnTools() has %v: the two lists differ, or it has no handler", i, specs[i].name, names))
		}
		t[specs[i].name] = &specs[i]
	}
	if len(specs) != len(names) {
		panic(fmt.Sprintf("mcpfront: ownTools() has %d tools, workflows.OwnTools() %d", len(specs), len(names)))
	}
	return t
}

// definition is the tool's MCP definition: raw schemas, and all four
// annotations set explicitly.
func (s *toolSpec) definition(f *Front) mcp.Tool {
	description := s.description
	if s.describe != nil {
		description = s.describe(f)
	}
	t := mcp.NewToolWithRawSchema(s.name, description, s.input)
	t.RawOutputSchema = s.output
	t.Annotations = mcp.ToolAnnotation{
		Title:           s.title,
		ReadOnlyHint:    mcp.ToBoolPtr(s.readOnly),
		DestructiveHint: mcp.ToBoolPtr(s.destructive),
		IdempotentHint:  mcp.ToBoolPtr(s.idempotent),
		OpenWorldHint:   mcp.ToBoolPtr(s.openWorld),
	}
	if s.task {
		t.Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
	}
	return t
}

// serverTool is the tool as this front serves it: its definition and its
// handler inside the middleware every tool gets.
func (s *toolSpec) serverTool(f *Front) server.ServerTool {
	return server.ServerTool{Tool: s.definition(f), Handler: f.middleware(s, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.handle(f, ctx, req)
	})}
}
