package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/internal/childenv"
	"github.com/durawait/durawait/internal/config"
)

func TestAgentProvidersCarryEveryFieldWithPresetsApplied(t *testing.T) {
	agents := config.Agents{Providers: map[string]config.AgentProvider{
		"mine": {
			Format: "text", Command: []string{"mycli", "--", "{prompt}"}, Resume: []string{"--resume", "{session_id}"},
			Model: []string{"-m", "{model}"}, Env: map[string]string{"A": "1"},
		},
		"codex": {},
	}}
	got := agentProviders(agents)
	assert.Equal(t, activities.AgentProvider{
		Format: "text", Command: []string{"mycli", "--", "{prompt}"}, Resume: []string{"--resume", "{session_id}"},
		Model: []string{"-m", "{model}"}, Env: map[string]string{"A": "1"},
	}, got["mine"])
	codex := config.AgentPresets["codex"]
	assert.Equal(t, activities.AgentProvider{Format: codex.Format, Command: codex.Command, Resume: codex.Resume, Model: codex.Model, Env: codex.Env,
		Inherit: childenv.Inherit{Names: []string{"OPENAI_*", "CODEX_*"}}},
		got["codex"], "a provider left empty runs its preset, inheriting its vendor's variables")
}

// agents.path is every CLI's PATH and agents.env is added to every CLI's
// environment; a provider's own env wins over both.
func TestAgentsPathAndEnvReachEveryProvider(t *testing.T) {
	agents := config.Agents{
		Path: []string{"/opt/agents/bin", "/usr/bin"},
		Env:  map[string]string{"SHARED": "1", "B": "agents"},
		Providers: map[string]config.AgentProvider{
			"mine":  {Format: "text", Command: []string{"mycli", "{prompt}"}, Env: map[string]string{"B": "mine"}},
			"other": {Format: "text", Command: []string{"other", "{prompt}"}, Env: map[string]string{"PATH": "/only/here"}},
		},
	}
	got := agentProviders(agents)
	assert.Equal(t, map[string]string{"PATH": "/opt/agents/bin:/usr/bin", "SHARED": "1", "B": "mine"}, got["mine"].Env)
	assert.Equal(t, map[string]string{"PATH": "/only/here", "SHARED": "1", "B": "agents"}, got["other"].Env)
	assert.Nil(t, agentProviders(config.Agents{Providers: map[string]config.AgentProvider{"codex": {}}})["codex"].Env,
		"without path and env, a preset's env is its own")
}
