package workflows

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInvocationIDForNamesTheIdenticalCallOnly(t *testing.T) {
	spec := AgentSpec{Provider: "claude", Prompt: "fix the build", Cwd: "/srv/work", RequestID: "k1"}
	id := InvocationIDFor("alice", spec)
	assert.Equal(t, id, InvocationIDFor("alice", spec), "the same call, the same invocation")
	_, err := ParseInvocationID(json.RawMessage(`{"invocation_id":"` + id + `"}`))
	require.NoError(t, err, "a well-formed invocation ID")
	for name, other := range map[string]AgentSpec{
		"another request_id": {Provider: "claude", Prompt: "fix the build", Cwd: "/srv/work", RequestID: "k2"},
		"another prompt":     {Provider: "claude", Prompt: "fix the tests", Cwd: "/srv/work", RequestID: "k1"},
		"another cwd":        {Provider: "claude", Prompt: "fix the build", Cwd: "/srv/other", RequestID: "k1"},
		"another model":      {Provider: "claude", Prompt: "fix the build", Cwd: "/srv/work", Model: "opus", RequestID: "k1"},
	} {
		assert.NotEqual(t, id, InvocationIDFor("alice", other), name)
	}
	assert.NotEqual(t, id, InvocationIDFor("bob", spec), "another principal's call is another invocation")
}

func TestStartAgentRequestIDRules(t *testing.T) {
	limits := AgentLimits{Providers: []string{"claude"}, AllowedRoots: []string{"/srv/work"}}
	spec, err := ParseStartAgent(json.RawMessage(`{"provider":"claude","prompt":"p","request_id":"k1"}`), limits)
	require.NoError(t, err)
	assert.Equal(t, "k1", spec.RequestID)
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "k1", "the workflow's input does not carry the request ID")
	for args, msg := range map[string]string{
		`{"provider":"claude","prompt":"p","request_id":""}`:                                 "request_id: must not be empty",
		`{"provider":"claude","prompt":"p","request_id":"` + strings.Repeat("k", 129) + `"}`: "request_id:",
		`{"provider":"claude","prompt":"p","request_id":7}`:                                  "request_id:",
		`{"provider":"claude","prompt":"p","request_id":"a\u0000b"}`:                         "request_id: must not contain NUL",
	} {
		_, err := ParseStartAgent(json.RawMessage(args), limits)
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), msg, args)
	}
}
