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
	assert.Equal(t, InheritEnv{Names: []string{"GITHUB_TOKEN", "AWS_*"}}, cfg.MCPServers[0].InheritEnv)
	_, err = load(`"yes"`)
	assert.ErrorContains(t, err, "inherit_env: must be true, false or a list of variable names")
	_, err = load(`["A=B"]`)
	assert.ErrorContains(t, err, "inherit_env[0]: must be an environment variable name")
}
