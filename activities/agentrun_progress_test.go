package activities

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/durawait/durawait/workflows"
)

// progressLog keeps the agent progress it is told of.
type progressLog struct{ messages []string }

func (l *progressLog) Observe(_ string, event workflows.WaitEvent) {
	if p, ok := event.(workflows.AgentProgress); ok {
		l.messages = append(l.messages, p.Message)
	}
}

func TestAgentProgressReportsEachChangeOnce(t *testing.T) {
	var log progressLog
	// A resumed run: the auth blocker was reported by the run before.
	p := progressReporter{observer: &log, id: "agent/1", blockers: map[string]bool{"auth_failed": true}}
	bash := &workflows.AgentActivity{Kind: "tool_call", State: "running", ToolName: "Bash"}
	sent := map[string]bool{"auth_failed": true}

	p.report(nil, sent, 0, false)  // nothing known yet
	p.report(bash, sent, 0, false) // the CLI runs a tool
	p.report(bash, sent, 0, false) // unchanged
	sent["permission_denied"] = true
	p.report(bash, sent, 0, false) // a new blocker; the activity is unchanged
	p.report(&workflows.AgentActivity{Kind: "tool_call", State: "completed", ToolName: "Bash"}, sent, 0, false)
	p.report(nil, sent, 3, true) // exit

	assert.Equal(t, []string{
		"activity: tool_call Bash (running)",
		"execution blocker: permission_denied",
		"activity: tool_call Bash (completed)",
		"the CLI exited with status 3",
	}, log.messages)
	assert.Equal(t, 4, p.step)
}
