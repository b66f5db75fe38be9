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
