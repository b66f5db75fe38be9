package agentstream

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/workflows"
)

func TestExplainPutsTheEndOfStderrInTheMessage(t *testing.T) {
	stderr := "starting\nnoise line\n\nline 3\nline 4\nline 5\nline 6\npanic: boom\n"
	out := workflows.AgentFinal{Status: workflows.AgentFailed,
		Error: &workflows.AgentError{Code: workflows.ErrCodeExitStatus, Message: "the CLI exited with status 3"}}
	Explain(&out, workflows.AgentFormatText, 3, stderr)
	assert.Equal(t, "the CLI exited with status 3; stderr: line 3 | line 4 | line 5 | line 6 | panic: boom", out.Error.Message)

	out = workflows.AgentFinal{Status: workflows.AgentFailed,
		Error: &workflows.AgentError{Code: workflows.ErrCodeAgentError, Message: "turn failed"}}
	Explain(&out, workflows.AgentFormatCodex, 1, strings.Repeat("y", 5000))
	assert.LessOrEqual(t, len([]rune(out.Error.Message)), len("turn failed; stderr: ")+maxStderrTailRunes)

	ok := workflows.AgentFinal{Status: workflows.AgentSucceeded}
	Explain(&ok, workflows.AgentFormatText, 0, "warning: whatever")
	assert.Nil(t, ok.Error, "a success stays one")

	blocked := workflows.AgentFinal{Status: workflows.AgentBlocked,
		Error: &workflows.AgentError{Code: workflows.BlockerRateLimit, Message: "usage limit"}}
	Explain(&blocked, workflows.AgentFormatClaude, 1, "some stderr")
	assert.Equal(t, "usage limit", blocked.Error.Message)
}

func TestExplainMapsGeminiExitStatuses(t *testing.T) {
	failed := func() workflows.AgentFinal {
		return workflows.AgentFinal{Status: workflows.AgentFailed,
			Error: &workflows.AgentError{Code: workflows.ErrCodeExitStatus, Message: "the CLI exited with status x"}}
	}
	out := failed()
	Explain(&out, workflows.AgentFormatGemini, 41, "Please set an Auth method in your settings.json or specify one of the following environment variables before running: GEMINI_API_KEY\n")
	assert.Equal(t, workflows.AgentBlocked, out.Status)
	assert.Equal(t, workflows.BlockerAuth, out.Error.Code)
	assert.Contains(t, out.Error.Message, "status 41")
	assert.Contains(t, out.Error.Message, "stderr: Please set an Auth method")

	out = failed()
	Explain(&out, workflows.AgentFormatGemini, 55, "")
	assert.Equal(t, workflows.AgentBlocked, out.Status)
	assert.Equal(t, workflows.BlockerPermission, out.Error.Code)
	assert.Contains(t, out.Error.Message, "GEMINI_CLI_TRUST_WORKSPACE")

	out = failed()
	Explain(&out, workflows.AgentFormatClaude, 41, "")
	assert.Equal(t, workflows.AgentFailed, out.Status, "41 means auth for Gemini only")
}

func TestRetriesShowInActivity(t *testing.T) {
	p, _ := New(workflows.AgentFormatClaude, time.Now)
	evs := p.Parse([]byte(`{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":4200,"error_status":529,"error":"overloaded_error","session_id":"s","uuid":"u"}`))
	var act *workflows.AgentActivity
	for _, ev := range evs {
		if ev.Activity != nil {
			act = ev.Activity
		}
		assert.Nil(t, ev.Blocker, "a retry is not a blocker")
	}
	require.NotNil(t, act)
	assert.Equal(t, workflows.AgentActivity{Kind: "api_retry", State: "attempt 2 of 10, next in 4.2s: 529 overloaded_error"}, *act)

	p, _ = New(workflows.AgentFormatCodex, time.Now)
	evs = p.Parse([]byte(`{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion: failed to lookup address information: Name does not resolve)"}`))
	require.Len(t, evs, 1)
	require.NotNil(t, evs[0].Activity)
	assert.Nil(t, evs[0].Blocker)
	assert.Equal(t, "reconnecting", evs[0].Activity.Kind)
	assert.True(t, strings.HasPrefix(evs[0].Activity.State, "Reconnecting... 2/5"))
}
