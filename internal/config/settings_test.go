package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A stdio session and its daemon compare what shapes what is served: the
// config's keys but those a daemon picks for itself, the file, and the
// PATH only where agent CLIs are looked up on it (agents configured, no
// agents.path).
func TestSettingsNameWhatASessionSharesWithItsDaemon(t *testing.T) {
	env := func(path string) func(string) string {
		return func(name string) string {
			if name == "PATH" {
				return path
			}
			return ""
		}
	}
	base := Config{File: "/etc/durawait.toml", HTTP: "127.0.0.1:8765", EnginePort: 7233, Tools: []string{"wait_for"}}
	a := base.Settings(env("/usr/bin"))
	assert.NotContains(t, a, "http", "a daemon listens where it can")
	assert.NotContains(t, a, "engine_port")
	assert.NotContains(t, a, PathSetting, "no agents: the PATH finds nothing")
	assert.Equal(t, `"/etc/durawait.toml"`, string(a["config"]))

	other := base
	other.Tools = []string{"wait_for_text"}
	other.EnginePort = 0
	assert.Equal(t, []string{"tools"}, SettingsDiff(a, other.Settings(env("/usr/bin"))))

	agents := base
	agents.Agents.Providers = map[string]AgentProvider{"claude": {}}
	assert.Equal(t, []string{PathSetting}, SettingsDiff(agents.Settings(env("/usr/bin")), agents.Settings(env("/opt/bin:/usr/bin"))))
	withOwn := agents
	withOwn.Agents.Providers = map[string]AgentProvider{"claude": {Env: map[string]string{"PATH": "/opt/claude/bin"}}}
	assert.NotContains(t, withOwn.Settings(env("/usr/bin")), PathSetting, "every provider sets its own PATH")
	agents.Agents.Path = []string{"/usr/local/bin", "/usr/bin"}
	assert.Empty(t, SettingsDiff(agents.Settings(env("/usr/bin")), agents.Settings(env("/opt/bin:/usr/bin"))),
		"agents.path set: the CLIs are found there, whatever the session's PATH")
}
