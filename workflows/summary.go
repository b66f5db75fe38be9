package workflows

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// What a person reads about a workflow in the Temporal UI: its summary in
// the list (StaticSummary, at most MaxSummaryBytes), its details in Markdown
// with the whole call (StaticDetails), its activities' summaries, and its
// memo in the tool's own argument names (durations in seconds).

// MaxSummaryBytes is Temporal's cap on a workflow's StaticSummary.
const MaxSummaryBytes = 200

// oneLine makes s fit on one line: control characters (C0, DEL, C1 with
// NEL U+0085) and the Unicode line and paragraph separators (U+2028,
// U+2029) become spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
}

// minQuoted is the least room fitSummary keeps for its quoted part.
const minQuoted = 8

// fitSummary builds "<head><quoted><tail>" within MaxSummaryBytes, cutting
// the quoted part (a regex, a prompt, a text) on a rune boundary first, so
// the bounds at the tail always show; a head too long to leave minQuoted
// bytes (a long cwd or pane) is cut too.
func fitSummary(head, quoted, tail string) string {
	head, quoted, tail = oneLine(head), oneLine(quoted), oneLine(tail)
	room := MaxSummaryBytes - len(head) - len(tail) - 2 // the quotes
	if room < minQuoted {
		head = TruncateUTF8(head, max(0, MaxSummaryBytes-len(tail)-2-minQuoted))
		room = MaxSummaryBytes - len(head) - len(tail) - 2
	}
	return TruncateUTF8(head+`"`+TruncateUTF8(quoted, room)+`"`+tail, MaxSummaryBytes)
}

// shortTool is a probe tool without its server ("k8s.kubectl_get" reads
// "kubectl_get"), as a person names it.
func shortTool(canonical string) string {
	if _, tool, ok := strings.Cut(canonical, "."); ok {
		return tool
	}
	return canonical
}

// condition is the wait_for condition in the tool's own words: the argument
// name and its value (the pattern, or the seconds).
func (u Until) condition() (name, value string) {
	if u.Kind == ConditionQuietForSec {
		return "quiet_for_sec", fmt.Sprintf("%d", u.QuietForSec)
	}
	return string(u.Kind), u.Pattern
}

// WaitForSummary is a wait_for's line in the workflow list, e.g.
// `wait_for kubectl_get name=web until matches "Running" (every 2 s, ≤300
// s)`, at most MaxSummaryBytes (a long regex is cut, the bounds stay); the
// probe's arguments as ProbeArgsLine shows them (hideValues: names only).
func WaitForSummary(s WaitForSpec, hideValues bool) string {
	bounds := fmt.Sprintf(" (every %d s, ≤%d s)", s.PollSec, s.MaxWaitSec)
	if s.Until.FailPattern != "" {
		bounds = ", fail_matches set" + bounds
	}
	head := "wait_for " + shortTool(s.Probe.Tool) + " until "
	if args := ProbeArgsLine(s.Probe.Args, hideValues); args != "" {
		head = "wait_for " + shortTool(s.Probe.Tool) + " " + args + " until "
	}
	if s.Until.Kind == ConditionQuietForSec {
		return TruncateUTF8(oneLine(fmt.Sprintf("%squiet for %d s%s", head, s.Until.QuietForSec, bounds)), MaxSummaryBytes)
	}
	return fitSummary(head+string(s.Until.Kind)+" ", s.Until.Pattern, bounds)
}

// PollSummary is the summary of wait_for's probe loop activity.
func PollSummary(s WaitForSpec) string {
	return TruncateUTF8(oneLine(fmt.Sprintf("probe %s every %d s until %s (≤%d s)",
		s.Probe.Tool, s.PollSec, s.Until.Kind, s.MaxWaitSec)), MaxSummaryBytes)
}

// WaitForDetails is a wait_for's StaticDetails: the whole call in Markdown
// (hideValues: the probe's argument values as "…").
func WaitForDetails(s WaitForSpec, hideValues bool) string {
	return markdownDetails(ToolWaitFor, fmt.Sprintf("Probe %s every %d s, at most %d s.", codeSpan(s.Probe.Tool), s.PollSec, s.MaxWaitSec), WaitForMemo(s, hideValues))
}

// WaitForMemo is a wait_for's memo: its arguments in the tool's own names
// (probe.tool, probe.args, until.matches / not_matches / quiet_for_sec /
// fail_matches, poll_sec, max_wait_sec in seconds); with hideValues, each
// of probe.args' values is "…".
func WaitForMemo(s WaitForSpec, hideValues bool) map[string]any {
	until := map[string]any{}
	name, _ := s.Until.condition()
	if s.Until.Kind == ConditionQuietForSec {
		until[name] = s.Until.QuietForSec
	} else {
		until[name] = s.Until.Pattern
	}
	if s.Until.FailPattern != "" {
		until["fail_matches"] = s.Until.FailPattern
	}
	args := s.Probe.Args
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if hideValues {
		args = maskArgValues(args)
	}
	m := map[string]any{
		"probe":        map[string]any{"tool": s.Probe.Tool, "args": args},
		"until":        until,
		"poll_sec":     s.PollSec,
		"max_wait_sec": s.MaxWaitSec,
	}
	if s.WakeOnEvent != "" {
		m["wake_on_event"] = s.WakeOnEvent
	}
	return m
}

// TextWaitSummary is a wait_for_text's line in the workflow list.
func TextWaitSummary(s TextWaitSpec, maxWaitSec int) string {
	return fitSummary("wait_for_text in pane "+s.Target.PaneID+" for ", s.Text, fmt.Sprintf(" (≤%d s)", maxWaitSec))
}

// WatchPaneSummary is the summary of wait_for_text's pane watch activity.
func WatchPaneSummary(s TextWaitSpec) string {
	return TruncateUTF8(oneLine("watch tmux pane "+s.Target.PaneID+" (generation "+s.Target.Generation+")"), MaxSummaryBytes)
}

// TextWaitMemo is a wait_for_text's memo in the tool's own argument names,
// plus the server-side bound in seconds.
func TextWaitMemo(s TextWaitSpec, maxWaitSec int) map[string]any {
	return map[string]any{
		"target":       map[string]any{"paneId": s.Target.PaneID, "generation": s.Target.Generation},
		"text":         s.Text,
		"max_wait_sec": maxWaitSec,
	}
}

// TextWaitDetails is a wait_for_text's StaticDetails in Markdown.
func TextWaitDetails(s TextWaitSpec, maxWaitSec int) string {
	return markdownDetails(ToolWaitForText, fmt.Sprintf("Watch tmux pane %s for the text, at most %d s.", codeSpan(s.Target.PaneID), maxWaitSec), TextWaitMemo(s, maxWaitSec))
}

// AgentSummary is an agent invocation's line in the workflow list.
func AgentSummary(s AgentSpec) string {
	return fitSummary("start_agent "+s.Provider+" in "+s.Cwd+": ", s.Prompt, "")
}

// AgentMemo is an agent invocation's memo in start_agent's argument names.
func AgentMemo(s AgentSpec) map[string]any {
	m := map[string]any{"provider": s.Provider, "prompt": s.Prompt, "cwd": s.Cwd}
	if s.Model != "" {
		m["model"] = s.Model
	}
	if s.SessionID != "" {
		m["session_id"] = s.SessionID
	}
	return m
}

// AgentDetails is an agent invocation's StaticDetails in Markdown.
func AgentDetails(s AgentSpec, maxRunSec int) string {
	return markdownDetails(ToolStartAgent, fmt.Sprintf("Run the %s CLI in %s, at most %d s.", codeSpan(s.Provider), codeSpan(s.Cwd), maxRunSec), AgentMemo(s))
}

// MaxDetailsBytes caps a StaticDetails as its payload encodes it (a JSON
// string): Temporal's limit.userMetadataDetailsSize is 20000 bytes, and a
// cluster that enforces it refuses the start of a workflow over it. The
// margin leaves room for the payload's metadata.
const MaxDetailsBytes = 19_500

// detailsCutNote ends details cut to fit MaxDetailsBytes.
const detailsCutNote = "\n*Cut to fit Temporal's details limit; the whole call is in the memo.*\n"

// markdownDetails is a workflow's StaticDetails: a heading, intro, and the
// call (memo) as indented JSON in a code fence longer than any run of
// backticks inside. Details over MaxDetailsBytes (a long prompt, large
// probe args) have the JSON cut on a rune boundary, with a note.
func markdownDetails(tool, intro string, memo any) string {
	raw, err := json.MarshalIndent(memo, "", "  ")
	if err != nil {
		raw = []byte(fmt.Sprintf("%q", "the call could not be shown: "+err.Error()))
	}
	body, note := string(raw), ""
	for {
		fence := strings.Repeat("`", max(3, longestRun(body, '`')+1))
		d := "### " + tool + "\n\n" + intro + "\n\n" + fence + "json\n" + body + "\n" + fence + "\n" + note
		over := encodedLen(d) - MaxDetailsBytes
		if over <= 0 || body == "" {
			return d
		}
		// The encoded form is at least as long as the text: cutting the
		// excess from the text, plus the note's own length, converges.
		note = detailsCutNote
		body = TruncateUTF8(body, max(0, len(body)-over-len(note)-8))
	}
}

// encodedLen is how long s is as a JSON string (how its payload holds it).
func encodedLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b)
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] != c {
			run = 0
			continue
		}
		run++
		longest = max(longest, run)
	}
	return longest
}

// codeSpan is s as inline Markdown code, delimited by more backticks than
// any run inside it (and padded when it begins or ends with one), on one
// line.
func codeSpan(s string) string {
	s = oneLine(s)
	delim := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return delim + s + delim
}

// EventLatchSummary is an event latch's line in the workflow list.
func EventLatchSummary(in EventLatchInput) string {
	return TruncateUTF8(oneLine("event "+in.Name+" of "+in.Caller+": posts kept "+in.Retention.String()), MaxSummaryBytes)
}

// EventWaitSummary is a wait_for_event's line in the workflow list.
func EventWaitSummary(s WaitForEventSpec) string {
	tail := fmt.Sprintf(" (≤%d s)", s.MaxWaitSec)
	if s.AfterSeq > 0 {
		tail = fmt.Sprintf(" after post %d", s.AfterSeq) + tail
	}
	if s.Match == "" {
		return TruncateUTF8(oneLine("wait_for_event "+s.Name+tail), MaxSummaryBytes)
	}
	return fitSummary("wait_for_event "+s.Name+" matching ", s.Match, tail)
}

// EventWaitMemo is a wait_for_event's memo in the tool's argument names.
func EventWaitMemo(s WaitForEventSpec) map[string]any {
	m := map[string]any{"name": s.Name, "max_wait_sec": s.MaxWaitSec}
	if s.Match != "" {
		m["match"] = s.Match
	}
	if s.AfterSeq > 0 {
		m["after_seq"] = s.AfterSeq
	}
	return m
}

// EventWaitDetails is a wait_for_event's StaticDetails in Markdown.
func EventWaitDetails(s WaitForEventSpec) string {
	return markdownDetails(ToolWaitForEvent, fmt.Sprintf("Wait for a post of event %s, at most %d s.", codeSpan(s.Name), s.MaxWaitSec), EventWaitMemo(s))
}
