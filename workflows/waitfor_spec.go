package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
)

// Limits and defaults of wait_for, from its contract (AURA's wait_for).
const (
	// MaxWaitCeilingSec is the ceiling max_wait_sec is clamped to.
	MaxWaitCeilingSec = 300
	// DefaultMaxWaitSec applies when max_wait_sec is omitted.
	DefaultMaxWaitSec = 120
	// DefaultPollSec applies when poll_sec is omitted.
	DefaultPollSec = 2
	// MaxObservationBytes is the largest probe output a sample may carry.
	MaxObservationBytes = 256 * 1024
)

// ConditionKind names the success condition of a wait_for.
type ConditionKind string

// The three success conditions of the wait_for contract, plus the failure condition
// durawait adds beside them.
const (
	ConditionMatches     ConditionKind = "matches"
	ConditionNotMatches  ConditionKind = "not_matches"
	ConditionQuietForSec ConditionKind = "quiet_for_sec"
	ConditionFailMatches ConditionKind = "fail_matches"
)

// Probe is the MCP tool a wait polls, with its arguments.
type Probe struct {
	// Tool is the canonical "<server>.<tool>" name of a downstream tool.
	Tool string `json:"tool"`
	// Args is the tool's argument object as canonical JSON (sorted keys).
	Args json.RawMessage `json:"args"`
}

// Until is the stop condition of a wait_for: exactly one success condition
// and an optional failure pattern.
type Until struct {
	Kind ConditionKind `json:"kind"`
	// Pattern is the RE2 pattern of matches / not_matches.
	Pattern string `json:"pattern,omitempty"`
	// QuietForSec is the quiet window of quiet_for_sec.
	QuietForSec int `json:"quiet_for_sec,omitempty"`
	// FailPattern, when set, ends the wait with reason "failed" on a match.
	FailPattern string `json:"fail_pattern,omitempty"`
}

// WaitForSpec is a parsed wait_for call. Values come from ParseWaitFor, which
// guarantees: the probe tool is a canonical downstream name, Args is a JSON
// object within MaxProbeArgsBytes, patterns compile within MaxPatternBytes
// and MaxPatternInstructions, 0 < PollSec < MaxWaitSec <= MaxWaitCeilingSec,
// and 0 < QuietForSec <= MaxWaitSec.
type WaitForSpec struct {
	Probe Probe `json:"probe"`
	Until Until `json:"until"`
	// PollSec is the interval between samples.
	PollSec int `json:"poll_sec"`
	// MaxWaitSec is the effective bound, after clamping.
	MaxWaitSec int `json:"max_wait_sec"`
	// WakeOnEvent, when set, names the event whose posts sample the probe
	// at once (a wake-up; the probe's output still decides).
	WakeOnEvent string `json:"wake_on_event,omitempty"`
}

// Poll is the interval between samples.
func (s WaitForSpec) Poll() time.Duration { return time.Duration(s.PollSec) * time.Second }

// MaxWait is the wait's bound.
func (s WaitForSpec) MaxWait() time.Duration { return time.Duration(s.MaxWaitSec) * time.Second }

// QuietFor is the quiet window of a quiet_for_sec condition (zero otherwise).
func (s WaitForSpec) QuietFor() time.Duration {
	return time.Duration(s.Until.QuietForSec) * time.Second
}

// ToolResolver maps the probe.tool a caller wrote to a canonical downstream
// tool name, or explains why it cannot be probed.
type ToolResolver interface {
	ResolveProbeTool(name string) (canonical string, err error)
}

// ProbeArgsChecker is implemented by a ToolResolver that knows each probe
// tool's input schema: ParseWaitFor then checks probe.args against it and
// reports each broken rule as a FieldError under "probe.args".
type ProbeArgsChecker interface {
	CheckProbeArgs(canonical string, args json.RawMessage) []*FieldError
}

var (
	waitForFields = []string{"probe", "until", "poll_sec", "max_wait_sec", "wake_on_event"}
	probeFields   = []string{"tool", "args"}
	untilFields   = []string{"matches", "not_matches", "quiet_for_sec", "fail_matches"}
)

// ParseWaitFor turns raw wait_for arguments into a WaitForSpec, applying the
// defaults and checking every rule. The error, when there is one, is a
// *ValidationError that names each broken rule's field.
func ParseWaitFor(raw json.RawMessage, tools ToolResolver) (WaitForSpec, error) {
	var errs fieldErrors
	top, ok := decodeObject(raw, "arguments", &errs)
	if !ok {
		return WaitForSpec{}, errs.err()
	}
	rejectUnknown(top, "", waitForFields, &errs)

	var spec WaitForSpec
	spec.Probe = parseProbe(top["probe"], tools, &errs)

	maxWait, maxWaitOK := DefaultMaxWaitSec, true
	if v, present := top["max_wait_sec"]; present {
		maxWait, maxWaitOK = parseSeconds(v, "max_wait_sec", &errs)
	}
	spec.MaxWaitSec = min(maxWait, MaxWaitCeilingSec)

	pollSec, pollOK := DefaultPollSec, true
	pollDefaulted := true
	if v, present := top["poll_sec"]; present {
		pollSec, pollOK = parseSeconds(v, "poll_sec", &errs)
		pollDefaulted = false
	}
	spec.PollSec = pollSec
	if pollOK && maxWaitOK && spec.PollSec >= spec.MaxWaitSec {
		what := "poll_sec"
		if pollDefaulted {
			what = "poll_sec (default)"
		}
		errs.add("poll_sec", fmt.Sprintf("%s %d must be less than max_wait_sec %d (after clamping to %d)",
			what, spec.PollSec, spec.MaxWaitSec, MaxWaitCeilingSec))
	}

	if _, present := top["wake_on_event"]; present {
		spec.WakeOnEvent = parseEventNameField(top, "wake_on_event", &errs)
	}

	spec.Until = parseUntil(top["until"], &errs)
	if spec.Until.Kind == ConditionQuietForSec && spec.Until.QuietForSec > 0 && maxWaitOK &&
		spec.Until.QuietForSec > spec.MaxWaitSec {
		errs.add("until.quiet_for_sec", fmt.Sprintf("%d must not exceed max_wait_sec %d",
			spec.Until.QuietForSec, spec.MaxWaitSec))
	}

	if err := errs.err(); err != nil {
		return WaitForSpec{}, err
	}
	return spec, nil
}

func parseProbe(raw json.RawMessage, tools ToolResolver, errs *fieldErrors) Probe {
	if raw == nil {
		errs.add("probe", "is required: an object {tool, args} naming the MCP tool to poll")
		return Probe{}
	}
	obj, ok := decodeObject(raw, "probe", errs)
	if !ok {
		return Probe{}
	}
	rejectUnknown(obj, "probe.", probeFields, errs)

	var p Probe
	var name string
	switch toolRaw, present := obj["tool"]; {
	case !present:
		errs.add("probe.tool", "is required: the name of a downstream MCP tool")
	case !decodeString(toolRaw, &name, "probe.tool", "", errs):
	case strings.TrimSpace(name) == "":
		errs.add("probe.tool", "must not be empty")
	case len(name) > MaxProbeToolBytes:
		errs.add("probe.tool", overLimit(MaxProbeToolBytes, len(name), "bytes"))
	default:
		canonical, err := tools.ResolveProbeTool(name)
		if err != nil {
			errs.add("probe.tool", err.Error())
		}
		p.Tool = canonical
	}

	p.Args = json.RawMessage(`{}`)
	if argsRaw, present := obj["args"]; present {
		args, err := CanonicalObject(argsRaw)
		if n := len(bytes.TrimSpace(argsRaw)); n > MaxProbeArgsBytes {
			errs.add("probe.args", overLimit(MaxProbeArgsBytes, n, "bytes of JSON"))
		} else if err != nil {
			errs.add("probe.args", err.Error())
		} else {
			p.Args = args
		}
	}
	if checker, ok := tools.(ProbeArgsChecker); ok && p.Tool != "" && !errs.has("probe.args") {
		*errs = append(*errs, checker.CheckProbeArgs(p.Tool, p.Args)...)
	}
	return p
}

func parseUntil(raw json.RawMessage, errs *fieldErrors) Until {
	if raw == nil {
		errs.add("until", "is required: an object with exactly one of matches, not_matches or quiet_for_sec")
		return Until{}
	}
	obj, ok := decodeObject(raw, "until", errs)
	if !ok {
		return Until{}
	}
	rejectUnknown(obj, "until.", untilFields, errs)

	var u Until
	var kinds []string
	for _, k := range []ConditionKind{ConditionMatches, ConditionNotMatches, ConditionQuietForSec} {
		if _, present := obj[string(k)]; present {
			kinds = append(kinds, string(k))
		}
	}
	switch len(kinds) {
	case 0:
		errs.add("until", "must hold exactly one of matches, not_matches or quiet_for_sec (it holds none)")
		return u
	case 1:
		u.Kind = ConditionKind(kinds[0])
	default:
		errs.add("until", fmt.Sprintf("must hold exactly one of matches, not_matches or quiet_for_sec (it holds %s)",
			strings.Join(kinds, ", ")))
		return u
	}

	switch u.Kind {
	case ConditionMatches, ConditionNotMatches:
		u.Pattern, _ = parsePattern(obj[string(u.Kind)], "until."+string(u.Kind), errs)
	case ConditionQuietForSec:
		u.QuietForSec, _ = parseSeconds(obj[string(u.Kind)], "until.quiet_for_sec", errs)
	}
	if failRaw, present := obj[string(ConditionFailMatches)]; present {
		u.FailPattern, _ = parsePattern(failRaw, "until.fail_matches", errs)
	}
	return u
}

// parsePattern checks that raw is a non-empty string that compiles as RE2,
// within MaxPatternBytes and MaxPatternInstructions.
func parsePattern(raw json.RawMessage, field string, errs *fieldErrors) (string, bool) {
	var pattern string
	if !decodeString(raw, &pattern, field, " holding a regular expression (RE2 syntax)", errs) {
		return "", false
	}
	if pattern == "" {
		errs.add(field, "must not be empty (an empty pattern matches any output)")
		return "", false
	}
	if len(pattern) > MaxPatternBytes {
		errs.add(field, overLimit(MaxPatternBytes, len(pattern), "bytes"))
		return "", false
	}
	if _, err := regexp.Compile(pattern); err != nil {
		errs.add(field, fmt.Sprintf("is not a valid regular expression (RE2 syntax): %v", err))
		return "", false
	}
	if n, err := PatternInstructions(pattern); err != nil || n > MaxPatternInstructions {
		errs.add(field, fmt.Sprintf("is too costly to match: it compiles to %d instructions, over the limit of %d "+
			"(large counted repetitions such as x{999} cost the most; simplify the pattern)", n, MaxPatternInstructions))
		return "", false
	}
	return pattern, true
}

// parseSeconds checks that raw is a whole number of seconds greater than zero.
// Values beyond a billion are held at a billion: far above every bound, and
// safe from overflow.
func parseSeconds(raw json.RawMessage, field string, errs *fieldErrors) (int, bool) {
	var n json.Number
	if kind := jsonKind(bytes.TrimSpace(raw)); kind != "a number" {
		errs.add(field, fmt.Sprintf("must be a whole number of seconds (got %s)", kind))
		return 0, false
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		errs.add(field, "must be a whole number of seconds")
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		errs.add(field, "must be a whole number of seconds")
		return 0, false
	}
	if f != math.Trunc(f) {
		errs.add(field, fmt.Sprintf("must be a whole number of seconds (got %s)", n))
		return 0, false
	}
	if f <= 0 {
		errs.add(field, fmt.Sprintf("must be greater than zero (got %s)", n))
		return 0, false
	}
	return int(min(f, 1e9)), true
}

// CanonicalObject re-encodes a JSON object with sorted keys and exact numbers:
// the form a wait_for spec keeps its probe arguments in.
func CanonicalObject(raw json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("must be a JSON object (got %s)", jsonKind(trimmed))
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("is not valid JSON: %v", err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cannot be re-encoded: %v", err)
	}
	return out, nil
}
