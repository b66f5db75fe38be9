// Package config loads durawait's TOML configuration file and checks it.
// Command-line flags override the file; see cmd/durawait.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/durawait/durawait/internal/temporalconn"
	"github.com/durawait/durawait/workflows"
)

// Config is durawait's whole configuration.
type Config struct {
	// Retired lists the keys of retired tables the file set (see
	// retiredTables): they are ignored, and durawait warns of each.
	Retired []string `toml:"-"`
	// File is the config file the configuration was loaded from
	// (absolute); empty for the defaults.
	File string `toml:"-"`
	// HTTP is the listen address of the MCP front end (streamable HTTP at
	// /mcp) and /healthz.
	HTTP string `toml:"http"`
	// Stdio serves MCP on stdin/stdout instead of HTTP.
	Stdio bool `toml:"stdio"`
	// DataDir holds the embedded engine's database and the lock file.
	DataDir string `toml:"data_dir"`
	// Temporal is the HOST:PORT of an existing Temporal frontend; empty runs
	// the embedded engine. The TEMPORAL_* environment and a Temporal config
	// file's profile may set it and the rest of the connection too (see
	// ResolveTemporal).
	Temporal string `toml:"temporal"`
	// Namespace is the Temporal namespace; empty takes the environment's or
	// the profile's, else "default".
	Namespace string `toml:"namespace"`
	// TemporalProfile and TemporalConfigFile select a profile of a Temporal
	// config file (the Temporal CLI's and SDKs' TOML format).
	TemporalProfile    string `toml:"temporal_profile"`
	TemporalConfigFile string `toml:"temporal_config_file"`
	// TemporalAPIKeyFile holds the API key of the cluster (a mounted
	// secret): an API key does not belong in a config file.
	TemporalAPIKeyFile string `toml:"temporal_api_key_file"`
	// TemporalTLS is [temporal_tls]: TLS and mTLS to the cluster.
	TemporalTLS TemporalTLS `toml:"temporal_tls"`
	// Connection is the resolved connection (ResolveTemporal); not a key
	// of the file.
	Connection temporalconn.Settings `toml:"-"`
	TaskQueue  string                `toml:"task_queue"`
	// EnginePort is the embedded engine's gRPC port.
	EnginePort int `toml:"engine_port"`
	// UIPort is the embedded Web UI's port; 0 picks a free one, as for
	// every port key.
	UIPort int `toml:"ui_port"`
	// UI runs the embedded Web UI (default true).
	UI bool `toml:"ui"`
	// RetentionHours is how long the embedded engine keeps closed waits
	// (their history, for the UI and `durawait waits`); on a cluster the
	// namespace's own retention applies.
	RetentionHours int    `toml:"retention_hours"`
	LogLevel       string `toml:"log_level"`
	// LogFormat is "text" (logfmt-style key=value lines) or "json" (one
	// JSON object per line).
	LogFormat string `toml:"log_format"`
	// EventResultMaxLen (tool_result_max_length) cuts the tool results
	// carried by GET /events to this many characters (a marker says how
	// many were cut).
	EventResultMaxLen int `toml:"tool_result_max_length"`
	// HideProbeArgValues shows a wait_for's probe arguments by name only
	// in what operators read (its target, summary, details and memo).
	HideProbeArgValues bool `toml:"hide_probe_arg_values"`
	// DaemonIdleExitMin is how long the background daemon that stdio
	// sessions share stays up with no client connected and no wait running;
	// 0 keeps it up until `durawait stop`.
	DaemonIdleExitMin int `toml:"daemon_idle_exit_min"`
	// DrainDelaySec is how long, on SIGTERM, an HTTP front end answers
	// /readyz 503 while it still takes new calls, before it drains them
	// and closes its listener: time for a load balancer's readiness probe
	// to see it leave. 0 drains at once.
	DrainDelaySec int `toml:"drain_delay_sec"`
	// HTTPReadTimeoutSec bounds reading one HTTP request, headers and body;
	// it does not bound the response, so long waits stream on.
	HTTPReadTimeoutSec int `toml:"http_read_timeout_sec"`
	// Pprof is the listen address of Go's profiler (net/http/pprof); empty
	// (the default) serves none. It must be a loopback address: a profile
	// shows the process's internals.
	Pprof string `toml:"pprof"`

	// Tools lists the opt-in tools to serve: list_panes, wait_for_text.
	Tools []string `toml:"tools"`

	// AllowedOrigins are the Origin header values accepted from browsers
	// besides loopback ones (which only a loopback listener accepts).
	AllowedOrigins []string `toml:"allowed_origins"`
	// Auth configures the authentication of HTTP callers; it is required
	// when http is not a loopback address.
	Auth Auth `toml:"auth"`

	Host       Host        `toml:"host"`
	MCPServers []MCPServer `toml:"mcp_servers"`
	Agents     Agents      `toml:"agents"`
	Tmux       Tmux        `toml:"tmux"`
	// Local configures the built-in probe server, `local`.
	Local Local `toml:"local"`
	// Events configures wait_for_event, post_event and the hooks.
	Events Events `toml:"events"`
}

// Tmux configures list_panes and wait_for_text.
type Tmux struct {
	// Socket selects the tmux server (tmux -S); empty is the user's default.
	Socket string `toml:"socket"`
	// WaitMaxSec is wait_for_text's server-side bound.
	WaitMaxSec int `toml:"wait_max_sec"`
	// Host names this worker's tmux host: its tmux task queue is
	// durawait-tmux-<host>. Empty is the machine's hostname.
	Host string `toml:"host"`
}

// Auth configures the authentication of HTTP callers: bearer tokens from a
// file, JWTs checked against an identity provider's JWKS, or both.
type Auth struct {
	// TokensFile maps tokens to principals ([[token]] principal, token).
	TokensFile string `toml:"tokens_file"`
	// JWKSURL, Issuer and Audience check JWTs; the principal is sub.
	JWKSURL  string `toml:"jwks_url"`
	Issuer   string `toml:"issuer"`
	Audience string `toml:"audience"`
}

// Enabled reports whether any authentication is configured.
func (a Auth) Enabled() bool { return a.TokensFile != "" || a.JWKSURL != "" }

// HTTPLoopback reports whether the HTTP listen address is a loopback one
// (localhost, 127.0.0.0/8, ::1).
func (c Config) HTTPLoopback() bool {
	host, _, err := net.SplitHostPort(c.HTTP)
	return err == nil && isLoopback(host)
}

// isLoopback reports whether host is localhost or a loopback IP.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckMCPAuth applies the rule of a process that serves MCP over HTTP:
// off loopback, callers must authenticate. (A worker's HTTP listener serves
// only /healthz, and stdio serves no HTTP.)
func (c Config) CheckMCPAuth() error {
	if c.Stdio || c.HTTP == "" || c.HTTPLoopback() || c.Auth.Enabled() {
		return nil
	}
	return fmt.Errorf("http: %s is not a loopback address, so MCP callers must authenticate: set auth.tokens_file, "+
		"or auth.jwks_url with auth.issuer and auth.audience (or listen on 127.0.0.1)", c.HTTP)
}

// OptInTools are the tools served only when listed in tools.
var OptInTools = []string{workflows.ToolListPanes, workflows.ToolWaitForText}

// ToolEnabled reports whether the opt-in tool name is enabled.
func (c Config) ToolEnabled(name string) bool { return slices.Contains(c.Tools, name) }

// TmuxWaitMax is wait_for_text's bound.
func (c Config) TmuxWaitMax() time.Duration { return time.Duration(c.Tmux.WaitMaxSec) * time.Second }

// Host is this worker's host: the identity under which its waits'
// loops run, and the lease that proves it alive (docs/hosts.md).
type Host struct {
	// ID names the host; empty derives it from the machine's name and the
	// data dir (one worker per data dir). Two workers must never share
	// one.
	ID string `toml:"id"`
	// LeaseSec is how long the worker may go unheard (a crash, a stall)
	// before its waits and agents move to another worker of its group, or
	// wait for it to come back. The worker renews its lease every half of
	// it, one engine action each time, whatever it holds.
	LeaseSec int `toml:"lease_sec"`
}

// MCPServer is one downstream MCP server.
type MCPServer struct {
	Name      string            `toml:"name"`
	Command   []string          `toml:"command"`
	Env       map[string]string `toml:"env"`
	URL       string            `toml:"url"`
	Transport string            `toml:"transport"`
	// Expose re-exposes the server's tools (default true).
	Expose *bool `toml:"expose"`

	// InheritEnv passes durawait's environment to a stdio server: true for
	// all of it, or a list of variable names (a trailing '*' matches a
	// prefix). Without it a server gets PATH, HOME, USER, LOGNAME, LANG,
	// LC_*, TMPDIR and TZ, plus its env.
	InheritEnv InheritEnv `toml:"inherit_env"`

	// ProbeTools names the tools wait_for may probe beyond those annotated
	// readOnlyHint: true (and not destructiveHint: true); "*" allows every
	// tool of the server.
	ProbeTools []string `toml:"probe_tools"`
}

// Exposed reports the expose setting with its default applied.
func (s MCPServer) Exposed() bool { return s.Expose == nil || *s.Expose }

// maxDrainDelaySec bounds drain_delay_sec: a readiness probe sees a
// draining front within a few of its periods.
const maxDrainDelaySec = 120

// Default returns the configuration used when no file is given. Its data
// dir is the user's state directory (see StateDir), or empty when there is
// none, which Validate reports.
func Default() Config {
	dataDir, _ := StateDir(os.Getenv)
	return Config{
		HTTP:               "127.0.0.1:8765",
		DataDir:            dataDir,
		DaemonIdleExitMin:  30,
		HTTPReadTimeoutSec: 30,
		TaskQueue:          "durawait",
		EnginePort:         7233,
		UIPort:             8233,
		UI:                 true,
		RetentionHours:     24,
		LogLevel:           "info",
		LogFormat:          "text",
		EventResultMaxLen:  16384,
		Host:               Host{LeaseSec: DefaultHostLeaseSec},
		Agents:             Agents{WaitWindowSec: 300, MaxRunSec: 6 * 3600, CancelGraceSec: 10, AnswerWaitSec: 300, MaxOutputMB: 64, UnreachableAfterSec: 180},
		Tmux:               Tmux{WaitMaxSec: 60},
		Local:              Local{TimeoutSec: 10},
		Events:             defaultEvents(),
	}
}

// retiredTables are tables of earlier releases whose keys no longer mean
// anything: a file that still sets them loads, and the keys are listed in
// Config.Retired for a warning. [wait_for] held the per-wait heartbeat
// settings that per-host leases replaced ([host], docs/hosts.md).
var retiredTables = []string{"wait_for"}

// retired reports whether key belongs to a retired table.
func retired(key string) bool {
	for _, t := range retiredTables {
		if strings.HasPrefix(key, t+".") {
			return true
		}
	}
	return false
}

// Load reads path over the defaults. Unknown keys are errors, so a typo does
// not silently fall back to a default. Relative paths in the file (data_dir
// and a server command's program) are taken from the file's folder.
func Load(path string) (Config, error) {
	cfg := Default()
	md, err := toml.DecodeFile(path, &cfg)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	var unknown []string
	for _, k := range md.Undecoded() {
		key := k.String()
		switch {
		case slices.Contains(retiredTables, key):
			// the table itself: its keys are listed
		case retired(key):
			cfg.Retired = append(cfg.Retired, key)
		default:
			unknown = append(unknown, key)
		}
	}
	if len(unknown) > 0 {
		return Config{}, fmt.Errorf("config %s: unknown keys: %s", path, strings.Join(unknown, ", "))
	}
	if abs, err := filepath.Abs(path); err == nil {
		cfg.File = abs
	}
	base := filepath.Dir(path)
	switch {
	case md.IsDefined("data_dir") && !filepath.IsAbs(cfg.DataDir):
		cfg.DataDir = filepath.Join(base, cfg.DataDir)
	case !md.IsDefined("data_dir") && cfg.DataDir != "":
		cfg.DataDir = configDataDir(cfg.DataDir, path)
	}
	for _, p := range []*string{&cfg.TemporalAPIKeyFile, &cfg.TemporalConfigFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
	cfg.TemporalTLS.resolvePaths(base)
	for _, p := range []*string{&cfg.Auth.TokensFile, &cfg.Events.HooksFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
	for i, s := range cfg.MCPServers {
		if len(s.Command) > 0 && strings.Contains(s.Command[0], "/") && !filepath.IsAbs(s.Command[0]) {
			cfg.MCPServers[i].Command[0] = filepath.Join(base, s.Command[0])
		}
	}
	for i, p := range cfg.Local.Paths {
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			if home, err := os.UserHomeDir(); err == nil {
				cfg.Local.Paths[i] = filepath.Join(home, rest)
			}
		} else if p != "" && !filepath.IsAbs(p) {
			cfg.Local.Paths[i] = filepath.Join(base, p)
		}
	}
	for i, p := range cfg.Agents.Path {
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			if home, err := os.UserHomeDir(); err == nil {
				cfg.Agents.Path[i] = filepath.Join(home, rest)
			}
		}
	}
	for name, p := range cfg.Agents.Providers {
		if len(p.Command) > 0 && strings.Contains(p.Command[0], "/") && !filepath.IsAbs(p.Command[0]) {
			p.Command[0] = filepath.Join(base, p.Command[0])
			cfg.Agents.Providers[name] = p
		}
	}
	return cfg, nil
}

// Validate checks every rule of the configuration and names each broken one.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.TaskQueue == "" {
		bad("task_queue: must not be empty")
	}
	if !c.Stdio && c.HTTP == "" {
		bad("http: must be a listen address such as 127.0.0.1:8765 (or set stdio)")
	}
	if c.Auth.JWKSURL != "" && (c.Auth.Issuer == "" || c.Auth.Audience == "") {
		bad("auth.jwks_url: needs auth.issuer and auth.audience")
	}
	if c.Auth.JWKSURL == "" && (c.Auth.Issuer != "" || c.Auth.Audience != "") {
		bad("auth.issuer, auth.audience: apply only with auth.jwks_url")
	}
	for i, o := range c.AllowedOrigins {
		if o == "" || o == "null" || !strings.Contains(o, "://") {
			bad("allowed_origins[%d]: %q must be an origin such as https://app.example.com", i, o)
		}
	}
	if c.Temporal == "" && c.DataDir == "" {
		bad("data_dir: must not be empty when the embedded engine runs (the default, the user's state directory, needs XDG_STATE_HOME or HOME)")
	}
	if c.Pprof != "" {
		if host, _, err := net.SplitHostPort(c.Pprof); err != nil || !isLoopback(host) {
			bad("pprof: must be a loopback address such as 127.0.0.1:6060, got %q", c.Pprof)
		}
	}
	if c.EnginePort < 0 || c.EnginePort > 65535 {
		bad("engine_port: must be a TCP port (0 picks a free one), got %d", c.EnginePort)
	}
	if c.UIPort < 0 || c.UIPort > 65535 {
		bad("ui_port: must be a TCP port (0 picks a free one; ui = false runs no UI), got %d", c.UIPort)
	}
	if c.RetentionHours < MinRetentionHours || c.RetentionHours > MaxRetentionHours {
		errs = append(errs, fmt.Errorf("retention_hours: %w: must be %d to %d, got %d",
			ErrRetentionHours, MinRetentionHours, MaxRetentionHours, c.RetentionHours))
	}
	if c.HTTPReadTimeoutSec < 1 {
		bad("http_read_timeout_sec: must be at least 1, got %d", c.HTTPReadTimeoutSec)
	}
	if c.DrainDelaySec < 0 || c.DrainDelaySec > maxDrainDelaySec {
		bad("drain_delay_sec: must be 0 (drain at once) to %d, got %d", maxDrainDelaySec, c.DrainDelaySec)
	}
	if c.DaemonIdleExitMin < 0 {
		bad("daemon_idle_exit_min: must be 0 (never) or more, got %d", c.DaemonIdleExitMin)
	}
	if _, err := c.SlogLevel(); err != nil {
		bad("log_level: %v", err)
	}
	if !slices.Contains(LogFormats, c.LogFormat) {
		bad("log_format: must be %s, got %q", strings.Join(LogFormats, " or "), c.LogFormat)
	}
	if c.EventResultMaxLen < 1 {
		bad("tool_result_max_length: must be at least 1 (characters), got %d", c.EventResultMaxLen)
	}
	if c.Host.LeaseSec < MinHostLeaseSec || c.Host.LeaseSec > MaxHostLeaseSec {
		bad("host.lease_sec: must be %d to %d, got %d", MinHostLeaseSec, MaxHostLeaseSec, c.Host.LeaseSec)
	}
	if id := c.Host.ID; id != "" && !hostIDPattern.MatchString(id) {
		bad("host.id: %q must be 1 to 100 letters, digits, '.', '_' or '-'", id)
	}
	seen := map[string]bool{}
	for i, s := range c.MCPServers {
		field := fmt.Sprintf("mcp_servers[%d]", i)
		switch {
		case s.Name == "":
			bad("%s.name: must not be empty", field)
		case strings.ContainsAny(s.Name, ". "):
			bad("%s.name: %q must not contain dots or spaces (tools are named <server>.<tool>)", field, s.Name)
		case seen[s.Name]:
			bad("%s.name: %q is used by another server", field, s.Name)
		case s.Name == LocalServerName && c.Local.On():
			bad("%s.name: %q is the built-in probe server's; name this server otherwise, or turn the built-in off (local.enabled = false)", field, s.Name)
		}
		seen[s.Name] = true
		switch {
		case len(s.Command) > 0 && s.URL != "":
			bad("%s: set command (stdio) or url (HTTP), not both", field)
		case len(s.Command) == 0 && s.URL == "":
			bad("%s: set command (a stdio server) or url (an HTTP server)", field)
		case len(s.Command) > 0 && s.Command[0] == "":
			bad("%s.command: the program must not be empty", field)
		}
		if s.Transport != "" && !slices.Contains([]string{"streamable-http", "sse"}, s.Transport) {
			bad("%s.transport: must be \"streamable-http\" or \"sse\", got %q", field, s.Transport)
		}
		if s.Transport != "" && s.URL == "" {
			bad("%s.transport: applies only with url", field)
		}
		for j, t := range s.ProbeTools {
			if strings.TrimSpace(t) == "" {
				bad("%s.probe_tools[%d]: must be a tool name or \"*\"", field, j)
			}
		}
	}
	for i, t := range c.Tools {
		if !slices.Contains(OptInTools, t) {
			bad("tools[%d]: %q is not an opt-in tool (opt-in tools: %s)", i, t, strings.Join(OptInTools, ", "))
		}
	}
	if c.Tmux.WaitMaxSec < 1 {
		bad("tmux.wait_max_sec: must be at least 1, got %d", c.Tmux.WaitMaxSec)
	}
	errs = append(errs, c.Agents.validate()...)
	errs = append(errs, c.Local.validate()...)
	errs = append(errs, c.Events.validate()...)
	return errors.Join(errs...)
}

// LogFormats are the values of log_format.
var LogFormats = []string{"text", "json"}

// The bounds of retention_hours: Temporal's minimum for a local
// namespace (1 h) and a year.
const (
	MinRetentionHours = 1
	MaxRetentionHours = 365 * 24
)

// ErrRetentionHours is the error (wrapped, naming the value) of a
// retention_hours out of its bounds.
var ErrRetentionHours = errors.New("retention out of bounds")

// Retention of closed waits on the embedded engine.
func (c Config) Retention() time.Duration { return time.Duration(c.RetentionHours) * time.Hour }

// SlogLevel parses LogLevel.
func (c Config) SlogLevel() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return 0, fmt.Errorf("must be debug, info, warn or error, got %q", c.LogLevel)
	}
	return l, nil
}

// Bounds and default of host.lease_sec.
const (
	DefaultHostLeaseSec = 6
	MinHostLeaseSec     = 2
	MaxHostLeaseSec     = 300
)

// hostIDPattern is what a host.id may hold: it names task queues and
// workflow IDs.
var hostIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)

// HostLease is host.lease_sec.
func (c Config) HostLease() time.Duration { return time.Duration(c.Host.LeaseSec) * time.Second }
