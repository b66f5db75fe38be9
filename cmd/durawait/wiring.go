package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"go.temporal.io/sdk/client"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/internal/childenv"
	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/internal/localprobes"
	"github.com/durawait/durawait/worker/downstream"
	"github.com/durawait/durawait/workflows"
)

// The configuration mapped onto each package's own options: config knows no
// activity, and activities know no TOML.

// agentRunner builds the runner of agent CLIs on this host, or nil when no
// provider is configured.
func agentRunner(cfg config.Config, tc client.Client, host string, logger *slog.Logger) (*activities.AgentRunner, error) {
	if len(cfg.Agents.Providers) == 0 {
		return nil, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the durawait executable (the agent supervisor): %w", err)
	}
	spool, err := filepath.Abs(filepath.Join(cfg.DataDir, "agents"))
	if err != nil {
		return nil, err
	}
	return &activities.AgentRunner{
		Providers:    agentProviders(cfg.Agents),
		AllowedRoots: cfg.Agents.AllowedRoots,
		SpoolDir:     spool,
		Host:         host,
		Machine:      queueSafe(machineName()),
		Supervisor:   []string{self, "agent-supervise"},
		Signals:      tc,
		CancelGrace:  cfg.Agents.CancelGrace(),
		MaxOutput:    cfg.Agents.MaxOutput(),
		// A CLI that cannot reach its API is a blocker after this.
		UnreachableAfter: cfg.Agents.UnreachableAfter(),
		Logger:           logger.With("component", "agents"),
	}, nil
}

// hostID is this worker's host: host.id, or the machine's name and a hash
// of the data dir (one worker per data dir holds its host.lock).
func hostID(cfg config.Config) (string, error) {
	if cfg.Host.ID != "" {
		return cfg.Host.ID, nil
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(dir))
	return queueSafe(machineName()) + "-" + hex.EncodeToString(sum[:4]), nil
}

// newInstance names this process: its host and a random suffix, new at
// each start.
func newInstance(host string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}

// machineName is the machine's host name ("localhost" when it has none).
func machineName() string {
	name, err := os.Hostname()
	switch {
	case err != nil || name == "":
		return "localhost"
	case name == workflows.AnyMachine:
		// "any" names the queue on which every worker adopts lost hosts.
		return "machine-any"
	}
	return name
}

// queueSafe keeps what a task queue name and a workflow ID take of a
// machine's name: letters, digits, '.', '_' and '-'.
func queueSafe(s string) string {
	out := []rune{}
	for _, r := range s {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' || r == '-') {
			out = append(out, r)
		} else {
			out = append(out, '_')
		}
	}
	return string(out)
}

// agentProviders maps the configured providers, presets applied, onto the
// runner's options.
func agentProviders(agents config.Agents) map[string]activities.AgentProvider {
	resolved := agents.ResolvedProviders()
	out := make(map[string]activities.AgentProvider, len(resolved))
	for name, p := range resolved {
		out[name] = activities.AgentProvider{Format: p.Format, Command: p.Command, Resume: p.Resume, Model: p.Model, Env: agentEnv(agents, p.Env),
			Inherit: childenv.Inherit{All: p.InheritEnv.All, Names: p.InheritEnv.Names}}
	}
	return out
}

// agentEnv is what a provider's CLI gets besides the inherited variables:
// agents.path as its PATH, agents.env, then the provider's own env, which
// wins. nil when none of them sets anything.
func agentEnv(agents config.Agents, own map[string]string) map[string]string {
	if len(agents.Path) == 0 && len(agents.Env) == 0 {
		return own
	}
	env := maps.Clone(agents.Env)
	if env == nil {
		env = map[string]string{}
	}
	if len(agents.Path) > 0 {
		env["PATH"] = strings.Join(agents.Path, string(os.PathListSeparator))
	}
	maps.Copy(env, own)
	return env
}

// catalogPollInterval is how often a front end with no worker in its
// process reads the workers' downstream catalog.
const catalogPollInterval = 3 * time.Second

// tmuxQueueOf is the task queue of this worker's tmux tools when one of
// them is enabled, else "".
func tmuxQueueOf(cfg config.Config) string {
	if cfg.ToolEnabled(workflows.ToolListPanes) || cfg.ToolEnabled(workflows.ToolWaitForText) {
		return tmuxHostQueue(cfg)
	}
	return ""
}

// tmuxHostQueue is the task queue of this worker's tmux tools: a tmux
// server is local to its host, named by tmux.host (default: the hostname).
func tmuxHostQueue(cfg config.Config) string {
	host := cfg.Tmux.Host
	if host == "" {
		host, _ = os.Hostname()
	}
	return "durawait-tmux-" + host
}

// managerStatus reports each of m's servers as "connected" or
// "unavailable: <last connection error>".
func managerStatus(m *downstream.Manager) map[string]string {
	servers := map[string]string{}
	for _, name := range m.ServerNames() {
		if _, _, err := m.ServerTools(name); err != nil {
			servers[name] = "unavailable: " + err.Error()
		} else {
			servers[name] = "connected"
		}
	}
	return servers
}

// orDisabled is url, or "disabled" when empty.
func orDisabled(url string) string {
	if url == "" {
		return "disabled"
	}
	return url
}

// serverConfigs are the downstream servers: the built-in probes (when
// local is on: config.LocalProbesOn), then the configured ones.
func serverConfigs(cfg config.Config, local bool) []downstream.ServerConfig {
	var out []downstream.ServerConfig
	if l := cfg.Local; local {
		// The data dir (engine credentials, the UI's login token, the
		// agents' spools) is never a file probe's.
		var deny []string
		if dir, err := filepath.Abs(cfg.DataDir); err == nil && cfg.DataDir != "" {
			deny = append(deny, dir)
		}
		probes := localprobes.New(localprobes.Policy{Hosts: l.Hosts, Paths: l.Paths, Commands: l.Commands, Deny: deny, Timeout: l.Timeout()})
		out = append(out, downstream.ServerConfig{Name: config.LocalServerName, InProcess: probes.Server(version), Expose: l.Expose})
	}
	for _, s := range cfg.MCPServers {
		out = append(out, downstream.ServerConfig{
			Name: s.Name, Command: s.Command, Env: s.Env, URL: s.URL,
			Inherit:   downstream.Inherit{All: s.InheritEnv.All, Names: s.InheritEnv.Names},
			Transport: s.Transport, Expose: s.Exposed(),
		})
	}
	return out
}

// probeTools are each server's probe_tools, which the worker publishes
// with its catalog.
func probeTools(cfg config.Config) map[string][]string {
	p := map[string][]string{}
	for _, s := range cfg.MCPServers {
		if len(s.ProbeTools) > 0 {
			p[s.Name] = s.ProbeTools
		}
	}
	return p
}
