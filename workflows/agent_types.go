package workflows

import (
	"bytes"
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

// FanInMode says when a wait_agent on several invocations answers.
type FanInMode string

// The fan-in modes. An invocation "answers" when a wait_agent on it alone
// would: it finished, or it hit a blocker.
const (
	// FanInAny answers at the first invocation that answers.
	FanInAny FanInMode = "any"
	// FanInAll answers once every invocation has answered.
	FanInAll FanInMode = "all"
	// FanInFirstBlocker answers at the first blocker (a run that ended
	// on one, status blocked, included), or once every invocation has
	// finished without one.
	FanInFirstBlocker FanInMode = "first_blocker"
)

// WaitAgentSpec is a wait_agent call: one invocation (Single), or several
// and the mode that says when the call answers.
type WaitAgentSpec struct {
	IDs    []string
	Mode   FanInMode
	Single bool
}

// ParseWaitAgent checks the arguments of wait_agent: invocation_id, or
// invocation_ids (1 to MaxFanIn distinct IDs) with an optional mode (any
// by default).
func ParseWaitAgent(raw json.RawMessage) (WaitAgentSpec, error) {
	var errs fieldErrors
	obj, ok := decodeObject(raw, "arguments", &errs)
	if !ok {
		return WaitAgentSpec{}, errs.err()
	}
	rejectUnknown(obj, "", []string{"invocation_id", "invocation_ids", "mode"}, &errs)
	one, hasOne := obj["invocation_id"]
	many, hasMany := obj["invocation_ids"]
	spec := WaitAgentSpec{Mode: FanInAny}
	switch {
	case hasOne && hasMany:
		errs.add("invocation_ids", "give invocation_id (one invocation) or invocation_ids (several), not both")
	case hasOne:
		spec.Single = true
		if id, ok := parseInvocationIDField(one, "invocation_id", &errs); ok {
			spec.IDs = []string{id}
		}
		if _, present := obj["mode"]; present {
			errs.add("mode", "applies to invocation_ids only (a wait on one invocation answers when it does)")
		}
	case hasMany:
		var items []json.RawMessage
		trimmed := bytes.TrimSpace(many)
		switch {
		case len(trimmed) == 0 || trimmed[0] != '[' || json.Unmarshal(trimmed, &items) != nil:
			errs.add("invocation_ids", fmt.Sprintf("must be an array of invocation IDs returned by start_agent (got %s)", jsonKind(trimmed)))
		case len(items) == 0:
			errs.add("invocation_ids", "must name at least one invocation")
		case len(items) > MaxFanIn:
			errs.add("invocation_ids", overLimit(MaxFanIn, len(items), "invocations"))
		default:
			seen := map[string]int{}
			for i, item := range items {
				field := fmt.Sprintf("invocation_ids[%d]", i)
				id, ok := parseInvocationIDField(item, field, &errs)
				if !ok {
					continue
				}
				if first, dup := seen[id]; dup {
					errs.add(field, fmt.Sprintf("repeats invocation_ids[%d] (%q): name each invocation once", first, id))
					continue
				}
				seen[id] = i
				spec.IDs = append(spec.IDs, id)
			}
		}
		if v, present := obj["mode"]; present {
			var mode string
			if decodeString(v, &mode, "mode", ": any, all or first_blocker", &errs) {
				switch FanInMode(mode) {
				case FanInAny, FanInAll, FanInFirstBlocker:
					spec.Mode = FanInMode(mode)
				default:
					errs.add("mode", fmt.Sprintf("must be any, all or first_blocker (got %q)", mode))
				}
			}
		}
	default:
		errs.add("invocation_id", "is required: the ID start_agent returned (or invocation_ids: several, with mode)")
	}
	if err := errs.err(); err != nil {
		return WaitAgentSpec{}, err
	}
	return spec, nil
}

// FanInPayload is wait_agent's answer on several invocations. Its top
// level is the payload of the invocation that decided the answer, as a
// wait_agent on it alone would have given it: the first to answer (any),
// the first blocker (first_blocker), the last to answer (all, and
// first_blocker when every invocation finished without one); at a window's
// end with the mode unmet, the first that still runs (reason
// wait_elapsed: call again). Invocations holds every invocation's payload,
// in the order the call named them.
type FanInPayload struct {
	InvocationPayload
	Mode FanInMode `json:"mode"`
	// Satisfied: the mode was met; false: the window ended first.
	Satisfied   bool                `json:"satisfied"`
	Invocations []InvocationPayload `json:"invocations"`
}

// Answered reports whether p is an answer of its invocation, as a
// wait_agent on it alone returns one: it finished, or hit a blocker.
func (p InvocationPayload) Answered() bool {
	return p.Reason == AgentReasonFinished || p.Reason == AgentReasonExecutionBlocked
}

// Blocked reports whether p reports a blocker: one the CLI hit while
// running, or the one it ended on (status blocked).
func (p InvocationPayload) Blocked() bool {
	return p.Reason == AgentReasonExecutionBlocked || p.Reason == AgentReasonFinished && p.Status == AgentBlocked
}

// FanInMet reports whether mode is met by payloads, those of the
// invocations that answered so far (answered[i]), and which one decided
// it; -1 when it is not met. last is the one that answered last.
func FanInMet(mode FanInMode, payloads []InvocationPayload, answered []bool, last int) (decider int, met bool) {
	all, finished := true, true
	for i, p := range payloads {
		if !answered[i] || !p.Answered() {
			all, finished = false, false
			continue
		}
		if p.Blocked() {
			finished = false
		}
	}
	switch mode {
	case FanInAny:
		if answered[last] && payloads[last].Answered() {
			return last, true
		}
	case FanInAll:
		if all {
			return last, true
		}
	case FanInFirstBlocker:
		if answered[last] && payloads[last].Blocked() {
			return last, true
		}
		if finished {
			return last, true
		}
	}
	return -1, false
}

// parseInvocationIDField reads one invocation ID, the value of field.
func parseInvocationIDField(raw json.RawMessage, field string, errs *fieldErrors) (string, bool) {
	var id string
	switch {
	case !decodeString(raw, &id, field, "", errs):
		return "", false
	case len(id) > MaxInvocationIDBytes:
		errs.add(field, overLimit(MaxInvocationIDBytes, len(id), "bytes"))
		return "", false
	case !strings.HasPrefix(id, AgentIDPrefix):
		errs.add(field, fmt.Sprintf("%q is not an invocation ID returned by start_agent", id))
		return "", false
	}
	return id, true
}

// ParseInvocationID checks the arguments of cancel_agent (and of a
// wait_agent on one invocation).
func ParseInvocationID(raw json.RawMessage) (string, error) {
	var errs fieldErrors
	obj, ok := decodeObject(raw, "arguments", &errs)
	if !ok {
		return "", errs.err()
	}
	rejectUnknown(obj, "", []string{"invocation_id"}, &errs)
	var id string
	if v, present := obj["invocation_id"]; !present {
		errs.add("invocation_id", "is required: the ID start_agent returned")
	} else {
		id, _ = parseInvocationIDField(v, "invocation_id", &errs)
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
