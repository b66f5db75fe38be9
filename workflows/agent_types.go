package workflows

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// AgentStatus is the status of a sub-agent invocation (the wait_agent output schema, v0.9.0).
type AgentStatus string

// The statuses of the wait_agent output schema.
const (
	AgentRunning   AgentStatus = "running"
	AgentSucceeded AgentStatus = "succeeded"
	AgentFailed    AgentStatus = "failed"
	AgentBlocked   AgentStatus = "blocked"
	AgentCancelled AgentStatus = "cancelled"
)

// AgentReason says why a start_agent / wait_agent / cancel_agent call
// returned. The reasons of wait_for are another type, WaitReason.
type AgentReason string

// The reasons of the agent tools' output schema.
const (
	AgentReasonStarted          AgentReason = "started"
	AgentReasonWaitElapsed      AgentReason = "wait_elapsed"
	AgentReasonExecutionBlocked AgentReason = "execution_blocked"
	AgentReasonFinished         AgentReason = "finished"
)

// Blocker categories: states a headless CLI cannot get past on its own. Each
// is also the error.code of an invocation that ended because of it.
const (
	BlockerPermission = "permission_denied"
	BlockerQuestion   = "user_input_required"
	BlockerAuth       = "auth_failed"
	BlockerRateLimit  = "rate_limited"
	BlockerBilling    = "billing"
	// BlockerNetwork: the CLI has been retrying its model's API (or
	// waiting for the network) for agents.unreachable_after_sec.
	BlockerNetwork = "network_unavailable"
)

// Error codes of invocations that failed for other reasons.
const (
	ErrCodeExitStatus = "exit_status"
	ErrCodeWorkerLost = "worker_lost"
	ErrCodeStart      = "start_failed"
	ErrCodeAgentError = "agent_error"
	// ErrCodeTimeout: the run exceeded agents.max_run_sec, counted over
	// all its attempts; the output is what the CLI had said by then.
	ErrCodeTimeout = "timeout"
	// ErrCodeCancelled: an operator cancelled the invocation's workflow
	// through Temporal (not cancel_agent); the message names who.
	ErrCodeCancelled = "cancelled"
)

// Output formats an agent CLI's output may be read as: the names a
// provider's format takes in the configuration, each read by its parser in
// activities/agentstream.
const (
	AgentFormatClaude = "claude-stream-json"
	AgentFormatCodex  = "codex-json"
	AgentFormatGemini = "gemini-stream-json"
	AgentFormatText   = "text"
)

// AgentFormats lists every output format, in a new slice.
func AgentFormats() []string {
	return []string{AgentFormatClaude, AgentFormatCodex, AgentFormatGemini, AgentFormatText}
}

// OutputTailChars is how much of the latest reply a running payload carries.
const OutputTailChars = 1000

// AgentActivity is what the CLI is doing now.
type AgentActivity struct {
	Kind     string `json:"kind"`
	State    string `json:"state,omitempty"`
	ToolName string `json:"tool_name,omitempty"`
	AgeMs    int64  `json:"age_ms,omitempty"`
}

// AgentError is the error of a failed or blocked invocation, or the blocker
// that woke a wait.
type AgentError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// InvocationPayload is what start_agent, wait_agent and cancel_agent return.
type InvocationPayload struct {
	InvocationID string         `json:"invocation_id"`
	Status       AgentStatus    `json:"status"`
	Reason       AgentReason    `json:"reason"`
	ElapsedMs    int64          `json:"elapsed_ms"`
	Output       *string        `json:"output,omitempty"`
	OutputAgeMs  *int64         `json:"output_age_ms,omitempty"`
	Activity     *AgentActivity `json:"activity,omitempty"`
	Error        *AgentError    `json:"error,omitempty"`
	SessionID    string         `json:"session_id,omitempty"`
}

// AgentSpec is a parsed start_agent call.
type AgentSpec struct {
	Provider  string `json:"provider"`
	Prompt    string `json:"prompt"`
	Cwd       string `json:"cwd"`
	Model     string `json:"model,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	// RequestID is the caller's key for retrying the call safely: an
	// identical start_agent call with the same request_id is the same
	// invocation (InvocationIDFor). It names the call, not the run, so the
	// workflow's input does not carry it.
	RequestID string `json:"-"`
}

// AgentLimits are the operator's rules start_agent arguments must follow.
type AgentLimits struct {
	// Providers lists the configured providers; only these can run.
	Providers []string
	// AllowedRoots are the folders a cwd must lie inside.
	AllowedRoots []string
}

// MaxPromptBytes bounds a prompt.
const MaxPromptBytes = 256 * 1024

var startAgentFields = []string{"provider", "prompt", "cwd", "model", "session_id", "request_id"}

// startAgentLimits bounds each start_agent argument, in bytes.
var startAgentLimits = map[string]int{
	"provider":   MaxProviderBytes,
	"prompt":     MaxPromptBytes,
	"cwd":        MaxPathBytes,
	"model":      MaxModelBytes,
	"session_id": MaxSessionIDBytes,
	"request_id": MaxRequestIDBytes,
}

// ParseStartAgent turns raw start_agent arguments into an AgentSpec. cwd
// defaults to the first allowed root; it must be absolute and lie inside an
// allowed root (checked lexically here, and again after resolving symbolic
// links where the CLI runs).
func ParseStartAgent(raw json.RawMessage, limits AgentLimits) (AgentSpec, error) {
	var errs fieldErrors
	obj, ok := decodeObject(raw, "arguments", &errs)
	if !ok {
		return AgentSpec{}, errs.err()
	}
	rejectUnknown(obj, "", startAgentFields, &errs)
	var spec AgentSpec
	str := func(field string, required bool) (string, bool) {
		v, present := obj[field]
		if !present {
			if required {
				errs.add(field, "is required")
			}
			return "", false
		}
		var s string
		if !decodeString(v, &s, field, "", &errs) {
			return "", false
		}
		if limit := startAgentLimits[field]; len(s) > limit {
			errs.add(field, overLimit(limit, len(s), "bytes"))
			return "", false
		}
		if strings.ContainsRune(s, 0) {
			// No argument vector, path or environment can carry one.
			errs.add(field, "must not contain NUL characters (\\u0000)")
			return "", false
		}
		return s, true
	}

	if p, ok := str("provider", true); ok {
		switch {
		case len(limits.Providers) == 0:
			errs.add("provider", "no agent providers are configured ([agents.providers.*] in the config)")
		case !slices.Contains(limits.Providers, p):
			errs.add("provider", fmt.Sprintf("%q is not a configured provider (configured: %s)", p, strings.Join(limits.Providers, ", ")))
		default:
			spec.Provider = p
		}
	}
	if p, ok := str("prompt", true); ok {
		switch {
		case strings.TrimSpace(p) == "":
			errs.add("prompt", "must not be empty")
		case !utf8.ValidString(p):
			errs.add("prompt", "must be valid UTF-8")
		default:
			spec.Prompt = p
		}
	}
	cwd, given := str("cwd", false)
	switch {
	case len(limits.AllowedRoots) == 0:
		errs.add("cwd", "no allowed roots are configured (agents.allowed_roots), so no agent can run")
	case !given && cwd == "":
		spec.Cwd = filepath.Clean(limits.AllowedRoots[0])
	case !filepath.IsAbs(cwd):
		errs.add("cwd", fmt.Sprintf("must be an absolute path (got %q)", cwd))
	case !insideAny(filepath.Clean(cwd), limits.AllowedRoots):
		errs.add("cwd", fmt.Sprintf("%q is outside the allowed roots (%s)", cwd, strings.Join(limits.AllowedRoots, ", ")))
	default:
		spec.Cwd = filepath.Clean(cwd)
	}
	if m, ok := str("model", false); ok {
		if strings.TrimSpace(m) == "" || strings.HasPrefix(m, "-") {
			errs.add("model", fmt.Sprintf("must be a model name, not empty and not starting with '-' (got %q)", m))
		} else {
			spec.Model = m
		}
	}
	if s, ok := str("request_id", false); ok {
		switch {
		case s == "":
			errs.add("request_id", "must not be empty (leave it out to start a new invocation each call)")
		case !utf8.ValidString(s):
			errs.add("request_id", "must be valid UTF-8")
		default:
			spec.RequestID = s
		}
	}
	if s, ok := str("session_id", false); ok {
		if strings.TrimSpace(s) == "" || strings.HasPrefix(s, "-") {
			errs.add("session_id", fmt.Sprintf("must be a provider session ID: not empty, not starting with '-' (got %q)", s))
		} else {
			spec.SessionID = s
		}
	}
	if err := errs.err(); err != nil {
		return AgentSpec{}, err
	}
	return spec, nil
}

// ParseInvocationID checks the arguments of wait_agent and cancel_agent.
func ParseInvocationID(raw json.RawMessage) (string, error) {
	var errs fieldErrors
	obj, ok := decodeObject(raw, "arguments", &errs)
	if !ok {
		return "", errs.err()
	}
	rejectUnknown(obj, "", []string{"invocation_id"}, &errs)
	var id string
	switch v, present := obj["invocation_id"]; {
	case !present:
		errs.add("invocation_id", "is required: the ID start_agent returned")
	case !decodeString(v, &id, "invocation_id", "", &errs):
	case len(id) > MaxInvocationIDBytes:
		errs.add("invocation_id", overLimit(MaxInvocationIDBytes, len(id), "bytes"))
	case !strings.HasPrefix(id, AgentIDPrefix):
		errs.add("invocation_id", fmt.Sprintf("%q is not an invocation ID returned by start_agent", id))
	}
	if err := errs.err(); err != nil {
		return "", err
	}
	return id, nil
}

// InsideRoot reports whether the clean absolute path lies in root.
func InsideRoot(path, root string) bool {
	rel, err := filepath.Rel(filepath.Clean(root), path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func insideAny(path string, roots []string) bool {
	for _, r := range roots {
		if InsideRoot(path, r) {
			return true
		}
	}
	return false
}

// Tail returns at most the last n characters (runes) of s.
func Tail(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[len(r)-n:])
}
