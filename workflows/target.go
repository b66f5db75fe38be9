package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A wait's target is what it waits for, in one short line an operator reads
// in every list: the Temporal UI's DurawaitTarget column, `durawait waits
// list`, /events and the wait's span. For example
//
//	demo.read_file path=build/status matches ^SUCCESS
//	tmux pane %3 contains "BUILD OK"
//	agent claude in /srv/app
//
// A probe's arguments show as name=value, top-level only, each value cut
// to maxArgValueBytes in its middle; with hidden values (the config's
// hide_probe_arg_values) as name=… (docs/temporal-ui.md, "What a wait
// waits for").

// MaxTargetBytes bounds a target: a Keyword search attribute, short enough
// for a list's column.
const MaxTargetBytes = 200

// maxArgValueBytes bounds one argument's value in a target.
const maxArgValueBytes = 48

// hiddenValue stands for an argument's value that is not shown.
const hiddenValue = "…"

// ProbeArgsLine is a probe's arguments as "name=value" pairs in name order
// (strings bare unless they hold a space or a quote, then quoted; objects
// and arrays as {…} and […]); with hideValues, "name=…". Arguments that are
// not a JSON object show as one value.
func ProbeArgsLine(args json.RawMessage, hideValues bool) string {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "{}" || string(args) == "null" {
		return ""
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(args, &fields); err != nil {
		if hideValues {
			return hiddenValue
		}
		return argValue(args)
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		value := hiddenValue
		if !hideValues {
			value = argValue(fields[name])
		}
		parts = append(parts, oneLine(name)+"="+value)
	}
	return strings.Join(parts, " ")
}

// argValue is one argument's value as a target shows it.
func argValue(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return `""`
	}
	switch raw[0] {
	case '{':
		return "{…}"
	case '[':
		return "[…]"
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return hiddenValue
		}
		s = CutMiddle(oneLine(s), maxArgValueBytes)
		if s == "" || strings.ContainsAny(s, " \"=") {
			return strconv.Quote(s)
		}
		return s
	}
	return TruncateUTF8(oneLine(string(raw)), maxArgValueBytes) // a number, true, false, null
}

// CutMiddle cuts s to at most max bytes by putting "…" in its middle, on
// rune boundaries: a path's file name and a URL's host both stay, and a
// target's condition.
func CutMiddle(s string, max int) string {
	if len(s) <= max {
		return s
	}
	room := max - len(hiddenValue)
	head := TruncateUTF8(s, room/2+len(hiddenValue)) // "…"-ended, room/2 bytes of s at most
	head = strings.TrimSuffix(head, hiddenValue)
	tail := s[len(s)-(room-len(head)):]
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return head + hiddenValue + tail
}

// WaitForTarget is a wait_for's target: its probe, the probe's arguments
// and its condition.
func WaitForTarget(s WaitForSpec, hideValues bool) string {
	parts := []string{s.Probe.Tool}
	if args := ProbeArgsLine(s.Probe.Args, hideValues); args != "" {
		parts = append(parts, args)
	}
	name, value := s.Until.condition()
	parts = append(parts, name, oneLine(value))
	return TruncateUTF8(strings.Join(parts, " "), MaxTargetBytes)
}

// TextWaitTarget is a wait_for_text's target: its pane and text.
func TextWaitTarget(s TextWaitSpec) string {
	return TruncateUTF8(oneLine(fmt.Sprintf("tmux pane %s contains %q", s.Target.PaneID, s.Text)), MaxTargetBytes)
}

// AgentTarget is an agent invocation's target: its provider and folder
// (not its prompt, which may be long or private; its summary and details
// show it).
func AgentTarget(s AgentSpec) string {
	return TruncateUTF8(oneLine("agent "+s.Provider+" in "+s.Cwd), MaxTargetBytes)
}

// maskArgValues is args with every top-level value replaced by "…" (args
// that are not an object become "…"), for the memo and details of a wait
// whose probe argument values are hidden.
func maskArgValues(args json.RawMessage) json.RawMessage {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(args, &fields); err != nil {
		return json.RawMessage(strconv.Quote(hiddenValue))
	}
	masked := make(map[string]string, len(fields))
	for name := range fields {
		masked[name] = hiddenValue
	}
	out, err := json.Marshal(masked)
	if err != nil {
		return json.RawMessage(strconv.Quote(hiddenValue))
	}
	return out
}
