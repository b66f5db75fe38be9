package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/internal/temporalconn"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "durawait.toml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func TestLoadAppliesDefaultsAndResolvesRelativePaths(t *testing.T) {
	path := writeFile(t, `
data_dir = "state"
ui_port = 0

[[mcp_servers]]
name = "k8s"
command = ["kubectl-mcp", "--read-only"]
env = { KUBECONFIG = "/etc/kube/config" }

[[mcp_servers]]
name = "demo"
command = ["../bin/demoprobe"]
expose = false

[[mcp_servers]]
name = "ci"
url = "http://127.0.0.1:9000/mcp"
transport = "sse"
`)
	cfg, err := Load(path)
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	dir := filepath.Dir(path)
	assert.Equal(t, filepath.Join(dir, "state"), cfg.DataDir)
	assert.Equal(t, 0, cfg.UIPort)
	assert.Equal(t, "127.0.0.1:8765", cfg.HTTP, "defaults stay")
	assert.Equal(t, DefaultHostLeaseSec, cfg.Host.LeaseSec)
	require.Len(t, cfg.MCPServers, 3)
	assert.Equal(t, []string{"kubectl-mcp", "--read-only"}, cfg.MCPServers[0].Command, "a bare program name is looked up on PATH")
	assert.Equal(t, filepath.Join(dir, "../bin/demoprobe"), cfg.MCPServers[1].Command[0])
	assert.True(t, cfg.MCPServers[0].Exposed())
	assert.False(t, cfg.MCPServers[1].Exposed())
	assert.Equal(t, "/etc/kube/config", cfg.MCPServers[0].Env["KUBECONFIG"])
}

func TestLoadRejectsUnknownKeys(t *testing.T) {
	_, err := Load(writeFile(t, "htpp = \"x\"\n[[mcp_servers]]\nname = \"a\"\ncommand = [\"x\"]\nexpse = true\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unknown keys: htpp, mcp_servers.expse")
}

// A file of an earlier release still loads: the per-wait heartbeat keys
// ([wait_for]) are listed as retired, not refused; a typo beside them is.
func TestLoadListsRetiredKeys(t *testing.T) {
	cfg, err := Load(writeFile(t, "[wait_for]\nheartbeat_timeout_sec = 5\nheartbeats_per_sec = 100\n"))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"wait_for.heartbeat_timeout_sec", "wait_for.heartbeats_per_sec"}, cfg.Retired)
	assert.Equal(t, DefaultHostLeaseSec, cfg.Host.LeaseSec)

	_, err = Load(writeFile(t, "[wait_for]\nheartbeat_timeout_sec = 5\n[host]\nleas_sec = 3\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unknown keys: host.leas_sec")
}

func TestLoadReportsSyntaxErrors(t *testing.T) {
	_, err := Load(writeFile(t, "http = \n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "durawait.toml")
}

func TestValidateNamesEveryBrokenRule(t *testing.T) {
	cfg := Default()
	cfg.LogLevel = "loud"
	cfg.LogFormat = "xml"
	cfg.EventResultMaxLen = 0
	cfg.UIPort = 70000
	cfg.Host.LeaseSec = 0
	cfg.MCPServers = []MCPServer{
		{Name: "", Command: []string{"x"}},
		{Name: "a.b", Command: []string{"x"}},
		{Name: "dup", Command: []string{"x"}},
		{Name: "dup", URL: "http://x", Command: []string{"y"}},
		{Name: "none"},
		{Name: "t", Command: []string{"x"}, Transport: "sse"},
		{Name: "u", URL: "http://x", Transport: "websocket"},
	}
	err := cfg.Validate()
	require.Error(t, err)
	for _, msg := range []string{
		`log_level: must be debug, info, warn or error, got "loud"`,
		`log_format: must be text or json, got "xml"`,
		"tool_result_max_length: must be at least 1 (characters), got 0",
		"ui_port: must be a TCP port (0 picks a free one; ui = false runs no UI), got 70000",
		"host.lease_sec: must be 2 to 300, got 0",
		"mcp_servers[0].name: must not be empty",
		`mcp_servers[1].name: "a.b" must not contain dots or spaces`,
		`mcp_servers[3].name: "dup" is used by another server`,
		"mcp_servers[3]: set command (stdio) or url (HTTP), not both",
		"mcp_servers[4]: set command (a stdio server) or url (an HTTP server)",
		"mcp_servers[5].transport: applies only with url",
		`mcp_servers[6].transport: must be "streamable-http" or "sse", got "websocket"`,
	} {
		assert.Contains(t, err.Error(), msg)
	}
}

func TestDefaultIsValid(t *testing.T) {
	assert.NoError(t, Default().Validate())
}

func TestExampleConfigsAreValid(t *testing.T) {
	for _, name := range []string{"demo.toml", "kubernetes-tools.toml"} {
		cfg, err := Load(filepath.Join("..", "..", "deploy", "examples", name))
		require.NoError(t, err, name)
		assert.NoError(t, cfg.Validate(), name)
	}
}

func TestAgentProvidersTakePresetsAndAreChecked(t *testing.T) {
	cfg, err := Load(writeFile(t, `
[agents]
allowed_roots = ["/srv/work"]
[agents.providers.claude]
[agents.providers.codex]
model = ["-m", "{model}"]
[agents.providers.mine]
format = "text"
command = ["./mycli", "{prompt}"]
`))
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	p := cfg.Agents.ResolvedProviders()
	assert.Equal(t, AgentPresets["claude"], p["claude"])
	assert.Equal(t, []string{"-m", "{model}"}, p["codex"].Model, "a field overrides the preset")
	assert.Equal(t, AgentPresets["codex"].Command, p["codex"].Command, "the rest comes from the preset")
	assert.True(t, filepath.IsAbs(p["mine"].Command[0]), "relative programs are taken from the config's folder")
	assert.Equal(t, []string{"claude", "codex", "mine"}, cfg.Agents.ProviderNames())
	assert.Equal(t, 300, cfg.Agents.WaitWindowSec)
	assert.Equal(t, int64(64<<20), cfg.Agents.MaxOutput(), "64 MiB per output file by default")

	cfg.Agents.Providers["nopreset"] = AgentProvider{}
	cfg.Agents.Providers["badformat"] = AgentProvider{Format: "xml", Command: []string{"x", "{prompt}", "{prompt}"}}
	cfg.Agents.AllowedRoots = []string{"relative/root"}
	cfg.Agents.WaitWindowSec = 0
	cfg.Agents.MaxOutputMB = 0
	cfg.Agents.Path = []string{"/usr/bin", "relative/bin"}
	err = cfg.Validate()
	require.Error(t, err)
	for _, msg := range []string{
		"agents.providers.nopreset.format: required for a provider without a built-in preset",
		"agents.providers.nopreset.command: required",
		`agents.providers.badformat.format: "xml" is not a known format`,
		`agents.providers.badformat.command: "{prompt}" may appear once, got 2`,
		`agents.allowed_roots[0]: "relative/root" must be an absolute path`,
		"agents.wait_window_sec: must be at least 1, got 0",
		"agents.max_output_mb: must be at least 1 (MiB), got 0",
		`agents.path[1]: "relative/bin" must be an absolute folder`,
	} {
		assert.Contains(t, err.Error(), msg)
	}
}

// A config file that sets no data_dir gets its own folder of the state dir:
// the same file always the same one, two projects' files two.
func TestEachConfigFileHasItsOwnDefaultDataDir(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	write := func(dir string) string {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		path := filepath.Join(dir, "durawait.toml")
		require.NoError(t, os.WriteFile(path, []byte("log_level = \"info\"\n"), 0o644))
		return path
	}
	a := write(filepath.Join(t.TempDir(), "project-a"))
	b := write(filepath.Join(t.TempDir(), "project-b"))
	cfgA, err := Load(a)
	require.NoError(t, err)
	again, err := Load(a)
	require.NoError(t, err)
	cfgB, err := Load(b)
	require.NoError(t, err)
	assert.Equal(t, cfgA.DataDir, again.DataDir)
	assert.NotEqual(t, cfgA.DataDir, cfgB.DataDir)
	assert.Equal(t, filepath.Join(state, "durawait", "configs"), filepath.Dir(cfgA.DataDir))
	assert.True(t, strings.HasPrefix(filepath.Base(cfgA.DataDir), "durawait-"), cfgA.DataDir)
	assert.Equal(t, filepath.Join(state, "durawait"), Default().DataDir, "no config file: the state dir itself")
}

func TestAuthIsRequiredOffLoopback(t *testing.T) {
	for addr, loopback := range map[string]bool{
		"127.0.0.1:8765": true, "127.1.2.3:1": true, "[::1]:8765": true, "localhost:8765": true,
		"0.0.0.0:8765": false, ":8765": false, "[::]:8765": false, "192.168.1.5:8765": false, "example.com:80": false,
	} {
		cfg := Default()
		cfg.HTTP = addr
		assert.Equal(t, loopback, cfg.HTTPLoopback(), addr)
		assert.NoError(t, cfg.Validate(), addr)
		err := cfg.CheckMCPAuth()
		if loopback {
			assert.NoError(t, err, addr)
			continue
		}
		assert.ErrorContains(t, err, "auth.tokens_file", addr)
		assert.ErrorContains(t, err, "auth.jwks_url", addr)
		cfg.Auth.TokensFile = "/etc/durawait/tokens.toml"
		assert.NoError(t, cfg.CheckMCPAuth(), addr)
		cfg.Auth = Auth{JWKSURL: "https://idp.example/jwks.json", Issuer: "https://idp.example", Audience: "durawait"}
		assert.NoError(t, cfg.CheckMCPAuth(), addr)
		assert.NoError(t, cfg.Validate(), addr)
	}
	cfg := Default()
	cfg.HTTP, cfg.Stdio = "0.0.0.0:8765", true
	assert.NoError(t, cfg.CheckMCPAuth(), "stdio serves no HTTP")

	cfg = Default()
	cfg.Auth.JWKSURL = "https://idp.example/jwks.json"
	assert.ErrorContains(t, cfg.Validate(), "auth.jwks_url: needs auth.issuer and auth.audience")
	cfg = Default()
	cfg.AllowedOrigins = []string{"null"}
	assert.ErrorContains(t, cfg.Validate(), "allowed_origins[0]")
}

func TestLoadResolvesTokensFile(t *testing.T) {
	path := writeFile(t, "[auth]\ntokens_file = \"tokens.toml\"\n")
	cfg, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(filepath.Dir(path), "tokens.toml"), cfg.Auth.TokensFile)
}

func TestProbeToolsAndReadTimeout(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d.toml")
	require.NoError(t, os.WriteFile(path, []byte(`data_dir = "x"
http_read_timeout_sec = 5
[[mcp_servers]]
name = "files"
command = ["fs"]
probe_tools = ["delete_file", "*"]
`), 0o644))
	cfg, err := Load(path)
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	assert.Equal(t, []string{"delete_file", "*"}, cfg.MCPServers[0].ProbeTools)
	assert.Equal(t, 5, cfg.HTTPReadTimeoutSec)
	assert.Equal(t, 30, Default().HTTPReadTimeoutSec)

	cfg.MCPServers[0].ProbeTools = []string{" "}
	cfg.HTTPReadTimeoutSec = 0
	err = cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `mcp_servers[0].probe_tools[0]: must be a tool name or "*"`)
	assert.Contains(t, err.Error(), "http_read_timeout_sec: must be at least 1, got 0")
}

func TestRetentionHoursIsBoundedWithANamedError(t *testing.T) {
	assert.Equal(t, 24*time.Hour, Default().Retention())
	for _, hours := range []int{0, -1, MaxRetentionHours + 1} {
		cfg := Default()
		cfg.RetentionHours = hours
		err := cfg.Validate()
		require.ErrorIs(t, err, ErrRetentionHours)
		assert.Contains(t, err.Error(), fmt.Sprintf("retention_hours: retention out of bounds: must be 1 to 8760, got %d", hours))
	}
	cfg := Default()
	cfg.RetentionHours = 1
	assert.NoError(t, cfg.Validate())
}

// [temporal_tls] and the key files are read relative to the file, and
// the file's connection settings sit between the TEMPORAL_* environment
// (over them) and the Temporal config file's profile (under them).
func TestTemporalConnectionKeys(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "api-key"), []byte("from-file-key\n"), 0o600))
	path := filepath.Join(dir, "durawait.toml")
	require.NoError(t, os.WriteFile(path, []byte(`
temporal = "cluster.example:7233"
namespace = "waits"
temporal_api_key_file = "api-key"
temporal_profile = "prod"
temporal_config_file = "temporal.toml"
[temporal_tls]
server_ca_cert_path = "certs/ca.pem"
server_name = "cluster.example"
`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "temporal.toml"), []byte("[profile.prod]\nnamespace = \"profile-ns\"\n[profile.prod.grpc_meta]\nx-team = \"a\"\n"), 0o600))
	cfg, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "certs/ca.pem"), cfg.TemporalTLS.ServerCACertPath)
	assert.Equal(t, filepath.Join(dir, "api-key"), cfg.TemporalAPIKeyFile)
	assert.Equal(t, filepath.Join(dir, "temporal.toml"), cfg.TemporalConfigFile)

	cfg.TemporalTLS.ServerCACertPath = "" // no such file: temporalconn's tests load real ones
	for _, name := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_API_KEY", "TEMPORAL_PROFILE", "TEMPORAL_CONFIG_FILE"} {
		t.Setenv(name, "") // empty is unset: the developer's shell stays out
	}
	t.Setenv("TEMPORAL_NAMESPACE", "env-ns")
	require.NoError(t, cfg.ResolveTemporal(temporalconn.Layer{}, nil, path))
	assert.Equal(t, "cluster.example:7233", cfg.Temporal)
	assert.Equal(t, "env-ns", cfg.Namespace, "TEMPORAL_NAMESPACE wins over the file")
	c := cfg.Connection
	assert.True(t, c.TLS())
	assert.True(t, c.APIKey())
	assert.Equal(t, path, c.Sources["api_key"])
	assert.Equal(t, map[string]string{"x-team": "a"}, c.Profile.GRPCMeta, "the profile's gRPC metadata is kept")

	require.NoError(t, os.Remove(filepath.Join(dir, "api-key")))
	err = cfg.ResolveTemporal(temporalconn.Layer{}, nil, path)
	require.ErrorContains(t, err, "temporal_api_key_file: read the API key")
}

// The heartbeat policy's keys: each broken rule is named, and the max
// defaults to 60 s, or the minimum when that is longer.
func TestHostKeys(t *testing.T) {
	cfg := Default()
	assert.Equal(t, 6*time.Second, cfg.HostLease())
	assert.Empty(t, cfg.Host.ID, "derived from the machine and the data dir unless set")
	require.NoError(t, cfg.Validate())

	for _, tc := range []struct {
		host Host
		msg  string
	}{
		{Host{LeaseSec: 1}, "host.lease_sec: must be 2 to 300, got 1"},
		{Host{LeaseSec: 301}, "host.lease_sec: must be 2 to 300, got 301"},
		{Host{LeaseSec: 6, ID: "laptop 1"}, `host.id: "laptop 1" must be 1 to 100 letters, digits, '.', '_' or '-'`},
	} {
		cfg := Default()
		cfg.Host = tc.host
		err := cfg.Validate()
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.msg)
	}
	cfg = Default()
	cfg.Host = Host{ID: "laptop-1.dev_2", LeaseSec: 2}
	assert.NoError(t, cfg.Validate())
	assert.Equal(t, 2*time.Second, cfg.HostLease())
}

// The built-in probes are on by default with nothing allowed beyond
// loopback; each rule of [local] names its key.
func TestLocalProbesConfig(t *testing.T) {
	cfg := Default()
	cfg.DataDir = t.TempDir()
	assert.True(t, cfg.Local.On())
	assert.Empty(t, cfg.Local.Paths)
	assert.Empty(t, cfg.Local.Commands)
	require.NoError(t, cfg.Validate())

	dir := t.TempDir()
	path := filepath.Join(dir, "durawait.toml")
	require.NoError(t, os.WriteFile(path, []byte(`
[local]
paths = ["work", "/srv/x", "~/projects"]
hosts = ["*.internal", "10.0.0.0/8", "192.0.2.1", "bad host", "http://x"]
commands = { "Bad Name" = ["true"], empty = [], ok = ["git", "status"] }
timeout_sec = 0

[[mcp_servers]]
name = "local"
command = ["x"]
`), 0o644))
	loaded, err := Load(path)
	require.NoError(t, err)
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "work"), "/srv/x", filepath.Join(home, "projects")}, loaded.Local.Paths,
		"relative paths are the config file's; ~/ is the home")
	err = loaded.Validate()
	require.Error(t, err)
	for _, msg := range []string{
		`local.hosts[3]: "bad host" must be a host name, a *.domain wildcard, an address or a CIDR prefix`,
		`local.hosts[4]: "http://x" must be a host name`,
		"local.commands.Bad Name: the name must be 1 to 64 lowercase letters, digits, '_' or '-'",
		"local.commands.empty: must be a non-empty argument vector",
		"local.timeout_sec: must be 1 to 60, got 0",
		`mcp_servers[0].name: "local" is the built-in probe server's; name this server otherwise, or turn the built-in off (local.enabled = false)`,
	} {
		assert.Contains(t, err.Error(), msg)
	}
	assert.NotContains(t, err.Error(), "local.hosts[0]")
	assert.NotContains(t, err.Error(), "local.commands.ok")

	off := false
	loaded.Local = Local{Enabled: &off, TimeoutSec: 10}
	assert.NoError(t, loaded.Validate(), "a server may be named local when the built-in is off")
}

// The built-in probes run by default only where every caller is on this
// machine; local.enabled decides when set.
func TestLocalProbesRunWhereCallersAreLocal(t *testing.T) {
	on, off := true, false
	for _, tc := range []struct {
		http    string
		stdio   bool
		front   bool
		enabled *bool
		want    bool
	}{
		{"127.0.0.1:8765", false, true, nil, true},
		{"[::1]:8765", false, true, nil, true},
		{"localhost:8765", false, true, nil, true},
		{"0.0.0.0:8765", false, true, nil, false},
		{"10.1.2.3:8765", false, true, nil, false},
		{"0.0.0.0:8765", true, true, nil, true},
		{"127.0.0.1:8765", false, false, nil, false},
		{"0.0.0.0:8765", false, true, &on, true},
		{"127.0.0.1:8765", false, true, &off, false},
		{"127.0.0.1:8765", false, false, &on, true},
	} {
		cfg := Default()
		cfg.HTTP, cfg.Stdio, cfg.Local.Enabled = tc.http, tc.stdio, tc.enabled
		assert.Equal(t, tc.want, cfg.LocalProbesOn(tc.front), "%+v", tc)
	}
}

// [events]: the retention's bounds, the shared names' patterns, and a
// hooks file relative to the config's folder.
func TestEventsKeys(t *testing.T) {
	cfg, err := Load(writeFile(t, "[events]\nretention_sec = 60\nshared = [\"team-*\"]\nhooks_file = \"hooks.toml\"\n"))
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	assert.Equal(t, time.Minute, cfg.Events.Retention())
	assert.Equal(t, filepath.Join(filepath.Dir(cfg.File), "hooks.toml"), cfg.Events.HooksFile)
	assert.Equal(t, 24*time.Hour, Default().Events.Retention(), "a day by default")

	cfg.Events.RetentionSec = 0
	cfg.Events.Shared = []string{"[a"}
	err = cfg.Validate()
	require.Error(t, err)
	assert.ErrorContains(t, err, "events.retention_sec: must be between 1 and 2592000 (30 days), got 0")
	assert.ErrorContains(t, err, `events.shared[0]: "[a" is not a name pattern`)
}
