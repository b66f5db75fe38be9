package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/durawait/durawait/workflows"
)

// Agents configures start_agent, wait_agent and cancel_agent.
type Agents struct {
	// WaitWindowSec is how long one wait_agent call waits (an operator
	// setting, never a tool argument).
	WaitWindowSec int `toml:"wait_window_sec"`
	// AllowedRoots are the folders an agent's cwd must lie inside.
	AllowedRoots []string `toml:"allowed_roots"`
	// MaxRunSec bounds one invocation's whole run.
	MaxRunSec int `toml:"max_run_sec"`
	// CancelGraceSec is how long cancel_agent waits after SIGTERM before
	// SIGKILL.
	CancelGraceSec int `toml:"cancel_grace_sec"`
	// AnswerWaitSec is how long an invocation whose CLI exited stays open
	// for the answer to a blocker a task of the 2026-07-28 tasks extension
	// was asked (docs/agents.md, "Answering a blocker"); 0: not at all.
	AnswerWaitSec int `toml:"answer_wait_sec"`
	// MaxOutputMB caps, in MiB, each output file (stdout, stderr) an
	// invocation's CLI run spools: past it the head and the newest half
	// are kept and the middle is cut (docs/agents.md, "Output on disk").
	MaxOutputMB int `toml:"max_output_mb"`
	// UnreachableAfterSec is how long a CLI may retry its model's API (or
	// wait for the network), saying nothing else, before the invocation
	// is blocked with network_unavailable; 0: never.
	UnreachableAfterSec int `toml:"unreachable_after_sec"`
	// Path is the PATH of every agent CLI (and where a command without a
	// '/' is looked up), folders in order; empty: durawait's own PATH,
	// which for the stdio daemon is the PATH of the session that started
	// it. A provider's env may still set PATH.
	Path []string `toml:"path"`
	// Env is added to every agent CLI's environment; a provider's env
	// wins over it.
	Env map[string]string `toml:"env"`
	// Providers are the CLIs that may run, by name. Only configured providers
	// run; a built-in preset fills what a provider leaves out.
	Providers map[string]AgentProvider `toml:"providers"`
}

// AgentProvider says how to run one agent CLI. Every argument is an element
// of an argument vector (no shell); "{prompt}", "{model}" and "{session_id}"
// in an element are replaced by the call's values.
type AgentProvider struct {
	// Format names the parser of the CLI's output: one of
	// workflows.AgentFormats.
	Format string `toml:"format"`
	// Command is the CLI and its arguments. Without "{prompt}" in it, the
	// prompt is written to the CLI's stdin. A prompt that is an element of
	// its own should follow a "--" (the end of the options), or a prompt
	// starting with '-' is refused rather than passed as an option.
	Command []string `toml:"command"`
	// Resume is inserted before the prompt when start_agent has a session_id.
	Resume []string `toml:"resume"`
	// Model is inserted before the prompt when start_agent has a model.
	Model []string `toml:"model"`
	// Env is added to the CLI's environment, which is otherwise minimal
	// (PATH, HOME, USER, LOGNAME, LANG, LC_*, TMPDIR, TZ of durawait's).
	Env map[string]string `toml:"env"`
	// InheritEnv passes more of durawait's environment to the CLI: true
	// for all of it, or a list of names (a trailing * matches a prefix),
	// e.g. ["ANTHROPIC_API_KEY"].
	InheritEnv InheritEnv `toml:"inherit_env"`
}

// AgentPresets are the built-in providers: each CLI in its headless,
// machine-readable mode, mapped to the format it emits. Each inherits its
// own vendor's variables from durawait's environment (API keys, base
// URLs) and nothing else beyond the minimal base (internal/childenv).
var AgentPresets = map[string]AgentProvider{
	"claude": {
		Format:     workflows.AgentFormatClaude,
		Command:    []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--", "{prompt}"},
		Resume:     []string{"--resume", "{session_id}"},
		Model:      []string{"--model", "{model}"},
		InheritEnv: InheritEnv{Names: []string{"ANTHROPIC_*", "CLAUDE_*"}},
	},
	"codebuddy": {
		Format:     workflows.AgentFormatClaude,
		Command:    []string{"codebuddy", "-p", "--output-format", "stream-json", "--verbose", "--", "{prompt}"},
		Resume:     []string{"--resume", "{session_id}"},
		Model:      []string{"--model", "{model}"},
		InheritEnv: InheritEnv{Names: []string{"CODEBUDDY_*"}},
	},
	"codex": {
		Format:     workflows.AgentFormatCodex,
		Command:    []string{"codex", "exec", "--json", "--skip-git-repo-check", "--", "{prompt}"},
		Resume:     []string{"resume", "{session_id}"},
		Model:      []string{"--model", "{model}"},
		InheritEnv: InheritEnv{Names: []string{"OPENAI_*", "CODEX_*"}},
	},
	"gemini": {
		Format:  workflows.AgentFormatGemini,
		Command: []string{"gemini", "--output-format", "stream-json", "--prompt={prompt}"},
		Resume:  []string{"--resume", "{session_id}"},
		Model:   []string{"--model", "{model}"},
		// Headless Gemini exits 55 in a folder it does not trust; every cwd
		// lies inside agents.allowed_roots, which the operator trusts.
		Env:        map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true"},
		InheritEnv: InheritEnv{Names: []string{"GEMINI_*", "GOOGLE_*"}},
	},
	"grok": {
		Format:     workflows.AgentFormatText,
		Command:    []string{"grok", "--prompt={prompt}"},
		Model:      []string{"--model", "{model}"},
		InheritEnv: InheritEnv{Names: []string{"XAI_*", "GROK_*"}},
	},
	"antigravity": {
		Format:     workflows.AgentFormatText,
		Command:    []string{"antigravity", "--prompt={prompt}"},
		Model:      []string{"--model", "{model}"},
		InheritEnv: InheritEnv{Names: []string{"ANTIGRAVITY_*", "GEMINI_*", "GOOGLE_*"}},
	},
}

// ResolvedProviders returns the configured providers with their presets
// applied to every field they leave empty (a preset's env variables are
// added to the provider's own, which win; inherit_env set in the config,
// even to an empty list, replaces the preset's).
func (a Agents) ResolvedProviders() map[string]AgentProvider {
	out := make(map[string]AgentProvider, len(a.Providers))
	for name, p := range a.Providers {
		preset := AgentPresets[name]
		if p.Format == "" {
			p.Format = preset.Format
		}
		if len(p.Command) == 0 {
			p.Command = preset.Command
		}
		if p.Resume == nil {
			p.Resume = preset.Resume
		}
		if p.Model == nil {
			p.Model = preset.Model
		}
		if !p.InheritEnv.set {
			p.InheritEnv = preset.InheritEnv
		}
		if len(preset.Env) > 0 {
			env := make(map[string]string, len(preset.Env)+len(p.Env))
			maps.Copy(env, preset.Env)
			maps.Copy(env, p.Env)
			p.Env = env
		}
		out[name] = p
	}
	return out
}

// ProviderNames lists the configured providers, sorted.
func (a Agents) ProviderNames() []string {
	names := make([]string, 0, len(a.Providers))
	for n := range a.Providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// WaitWindow is the wait_agent window.
func (a Agents) WaitWindow() time.Duration { return time.Duration(a.WaitWindowSec) * time.Second }

// MaxRun bounds one invocation.
func (a Agents) MaxRun() time.Duration { return time.Duration(a.MaxRunSec) * time.Second }

// AnswerWait is how long an ended run stays open for a blocker's answer.
func (a Agents) AnswerWait() time.Duration { return time.Duration(a.AnswerWaitSec) * time.Second }

// MaxOutput is the cap in bytes of each output file of a CLI run.
func (a Agents) MaxOutput() int64 { return int64(a.MaxOutputMB) << 20 }

// UnreachableAfter is agents.unreachable_after_sec.
func (a Agents) UnreachableAfter() time.Duration {
	return time.Duration(a.UnreachableAfterSec) * time.Second
}

// CancelGrace is the SIGTERM to SIGKILL delay of cancel_agent.
func (a Agents) CancelGrace() time.Duration { return time.Duration(a.CancelGraceSec) * time.Second }

func (a Agents) validate() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if a.WaitWindowSec < 1 {
		bad("agents.wait_window_sec: must be at least 1, got %d", a.WaitWindowSec)
	}
	if a.MaxRunSec < 1 {
		bad("agents.max_run_sec: must be at least 1, got %d", a.MaxRunSec)
	}
	if a.AnswerWaitSec < 0 {
		bad("agents.answer_wait_sec: must not be negative, got %d", a.AnswerWaitSec)
	}
	if a.CancelGraceSec < 0 {
		bad("agents.cancel_grace_sec: must not be negative, got %d", a.CancelGraceSec)
	}
	if a.UnreachableAfterSec < 0 {
		bad("agents.unreachable_after_sec: must be 0 (never) or more, got %d", a.UnreachableAfterSec)
	}
	if a.MaxOutputMB < 1 {
		bad("agents.max_output_mb: must be at least 1 (MiB), got %d", a.MaxOutputMB)
	}
	for i, p := range a.Path {
		if !filepath.IsAbs(p) {
			bad("agents.path[%d]: %q must be an absolute folder", i, p)
		}
	}
	for i, r := range a.AllowedRoots {
		if !filepath.IsAbs(r) {
			bad("agents.allowed_roots[%d]: %q must be an absolute path", i, r)
		}
	}
	for _, name := range a.ProviderNames() {
		p := a.ResolvedProviders()[name]
		field := "agents.providers." + name
		if p.Format == "" {
			bad("%s.format: required for a provider without a built-in preset (presets: %s)", field, strings.Join(presetNames(), ", "))
		} else if !slices.Contains(workflows.AgentFormats(), p.Format) {
			bad("%s.format: %q is not a known format (%s)", field, p.Format, strings.Join(workflows.AgentFormats(), ", "))
		}
		if len(p.Command) == 0 || p.Command[0] == "" {
			bad("%s.command: required for a provider without a built-in preset", field)
		}
		if count := countPrompt(p.Command); count > 1 {
			bad("%s.command: \"{prompt}\" may appear once, got %d", field, count)
		}
	}
	return errs
}

func countPrompt(argv []string) int {
	n := 0
	for _, a := range argv {
		n += strings.Count(a, "{prompt}")
	}
	return n
}

func presetNames() []string {
	names := make([]string, 0, len(AgentPresets))
	for n := range AgentPresets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
