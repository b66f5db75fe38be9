package workflows

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var limits = AgentLimits{Providers: []string{"claude", "codex"}, AllowedRoots: []string{"/srv/work", "/home/ci"}}

func TestParseStartAgent(t *testing.T) {
	spec, err := ParseStartAgent(json.RawMessage(`{"provider":"codex","prompt":"fix it","cwd":"/srv/work/repo/../repo","model":"o4","session_id":"abc"}`), limits)
	require.NoError(t, err)
	assert.Equal(t, AgentSpec{Provider: "codex", Prompt: "fix it", Cwd: "/srv/work/repo", Model: "o4", SessionID: "abc"}, spec)

	spec, err = ParseStartAgent(json.RawMessage(`{"provider":"claude","prompt":"go"}`), limits)
	require.NoError(t, err)
	assert.Equal(t, "/srv/work", spec.Cwd, "cwd defaults to the first allowed root")
}

func TestParseStartAgentRules(t *testing.T) {
	for _, tc := range []struct{ args, field, rule string }{
		{`{"prompt":"x"}`, "provider", "is required"},
		{`{"provider":"gpt","prompt":"x"}`, "provider", `"gpt" is not a configured provider (configured: claude, codex)`},
		{`{"provider":1,"prompt":"x"}`, "provider", "must be a string"},
		{`{"provider":"claude"}`, "prompt", "is required"},
		{`{"provider":"claude","prompt":"  "}`, "prompt", "must not be empty"},
		{`{"provider":"claude","prompt":"` + strings.Repeat("x", MaxPromptBytes+1) + `"}`, "prompt", "must be at most 262144 bytes"},
		{`{"provider":"claude","prompt":"x","cwd":"repo"}`, "cwd", `must be an absolute path (got "repo")`},
		{`{"provider":"claude","prompt":"x","cwd":"/srv/work/../etc"}`, "cwd", `"/srv/work/../etc" is outside the allowed roots (/srv/work, /home/ci)`},
		{`{"provider":"claude","prompt":"x","cwd":"/srv/workshop"}`, "cwd", `"/srv/workshop" is outside the allowed roots`},
		{`{"provider":"claude","prompt":"x","model":"--dangerously-skip-permissions"}`, "model", "must be a model name, not empty and not starting with '-'"},
		{`{"provider":"claude","prompt":"x","session_id":"-rf"}`, "session_id", "must be a provider session ID: not empty, not starting with '-'"},
		{`{"provider":"claude","prompt":"x","timeout":3}`, "timeout", "unknown field"},
		{`{"provider":"claude","prompt":"a\u0000b"}`, "prompt", `must not contain NUL characters (\u0000)`},
		{`{"provider":"claude","prompt":"x","cwd":"/srv/work/a\u0000"}`, "cwd", "must not contain NUL characters"},
		{`{"provider":"claude","prompt":"x","model":"o\u0000"}`, "model", "must not contain NUL characters"},
		{`{"provider":"claude","prompt":"x","session_id":"s\u0000"}`, "session_id", "must not contain NUL characters"},
		{`{"provider":"clau\u0000de","prompt":"x"}`, "provider", "must not contain NUL characters"},
	} {
		_, err := ParseStartAgent(json.RawMessage(tc.args), limits)
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.field+": "+tc.rule, tc.args)
	}
	_, err := ParseStartAgent(json.RawMessage(`{"provider":"claude","prompt":"x"}`), AgentLimits{})
	assert.ErrorContains(t, err, "provider: no agent providers are configured")
	assert.ErrorContains(t, err, "cwd: no allowed roots are configured (agents.allowed_roots)")
}

func TestParseInvocationID(t *testing.T) {
	id, err := ParseInvocationID(json.RawMessage(`{"invocation_id":"agent/0123abcd"}`))
	require.NoError(t, err)
	assert.Equal(t, "agent/0123abcd", id)
	for args, msg := range map[string]string{
		`{}`:                                "invocation_id: is required",
		`{"invocation_id":3}`:               "invocation_id: must be a string",
		`{"invocation_id":"wait_for/x"}`:    `invocation_id: "wait_for/x" is not an invocation ID returned by start_agent`,
		`{"invocation_id":"agent/1","x":1}`: "x: unknown field",
	} {
		_, err := ParseInvocationID(json.RawMessage(args))
		assert.ErrorContains(t, err, msg, args)
	}
}

func TestTailKeepsTheLastCharacters(t *testing.T) {
	assert.Equal(t, "abc", Tail("abc", 5))
	assert.Equal(t, "дé", Tail("abcдé", 2), "characters, not bytes")
}
