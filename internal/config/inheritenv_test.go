package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInheritEnvTakesABooleanOrNames(t *testing.T) {
	load := func(value string) (Config, error) {
		path := filepath.Join(t.TempDir(), "d.toml")
		body := "data_dir = \"/tmp/d\"\n[[mcp_servers]]\nname = \"a\"\ncommand = [\"x\"]\n"
		if value != "" {
			body += "inherit_env = " + value + "\n"
		}
		require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
		return Load(path)
	}
	cfg, err := load("")
	require.NoError(t, err)
	assert.Equal(t, InheritEnv{}, cfg.MCPServers[0].InheritEnv, "minimal by default")
	cfg, err = load("true")
	require.NoError(t, err)
	assert.True(t, cfg.MCPServers[0].InheritEnv.All)
	cfg, err = load(`["GITHUB_TOKEN", "AWS_*"]`)
	require.NoError(t, err)
	assert.Equal(t, []string{"GITHUB_TOKEN", "AWS_*"}, cfg.MCPServers[0].InheritEnv.Names)
	assert.False(t, cfg.MCPServers[0].InheritEnv.All)
	_, err = load(`"yes"`)
	assert.ErrorContains(t, err, "inherit_env: must be true, false or a list of variable names")
	_, err = load(`["A=B"]`)
	assert.ErrorContains(t, err, "inherit_env[0]: must be an environment variable name")
}

// An agent provider inherits its preset's vendor variables unless its
// inherit_env is set, even to false or an empty list.
func TestAProvidersInheritEnvReplacesItsPresets(t *testing.T) {
	load := func(value string) AgentProvider {
		path := filepath.Join(t.TempDir(), "d.toml")
		body := "data_dir = \"/tmp/d\"\n[agents]\nallowed_roots = [\"/tmp\"]\n[agents.providers.claude]\n"
		if value != "" {
			body += "inherit_env = " + value + "\n"
		}
		require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
		cfg, err := Load(path)
		require.NoError(t, err)
		return cfg.Agents.ResolvedProviders()["claude"]
	}
	assert.Equal(t, []string{"ANTHROPIC_*", "CLAUDE_*"}, load("").InheritEnv.Names, "the preset's")
	assert.Empty(t, load("false").InheritEnv.Names, "false: the minimal environment only")
	assert.False(t, load("false").InheritEnv.All)
	assert.Empty(t, load("[]").InheritEnv.Names)
	assert.Equal(t, []string{"MY_KEY"}, load(`["MY_KEY"]`).InheritEnv.Names)
	assert.True(t, load("true").InheritEnv.All)
}
