package activities

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/workflows"
)

func TestBuildArgvPlacesOptionalArgumentsBeforeThePrompt(t *testing.T) {
	spec := workflows.AgentSpec{Prompt: "fix the build; rm -rf / is not a command here", Model: "o4", SessionID: "th-1"}
	argv, stdin := BuildArgv(config.AgentPresets["codex"], spec)
	assert.Equal(t, []string{"codex", "exec", "--json", "--skip-git-repo-check", "--model", "o4", "resume", "th-1",
		"fix the build; rm -rf / is not a command here"}, argv, "the prompt is one argument, never shell text")
	assert.Nil(t, stdin)

	argv, _ = BuildArgv(config.AgentPresets["gemini"], workflows.AgentSpec{Prompt: "hi"})
	assert.Equal(t, []string{"gemini", "--output-format", "stream-json", "--prompt=hi"}, argv, "no model, no resume")

	argv, stdin = BuildArgv(config.AgentProvider{Command: []string{"mycli", "--headless"}, Resume: []string{"--continue", "{session_id}"}},
		workflows.AgentSpec{Prompt: "via stdin", SessionID: "s9"})
	assert.Equal(t, []string{"mycli", "--headless", "--continue", "s9"}, argv)
	assert.Equal(t, []byte("via stdin"), stdin, "without {prompt} the prompt goes to stdin")
}
