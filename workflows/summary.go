package workflows

import (
	"encoding/json"
	"fmt"
	"strings"
)

// What a person reads about a workflow in the Temporal UI: its summary in
// the list (StaticSummary, at most MaxSummaryBytes), its details in Markdown
// with the whole call (StaticDetails), its activities' summaries, and its
// memo in the tool's own argument names (durations in seconds).

// MaxSummaryBytes is Temporal's cap on a workflow's StaticSummary.
const MaxSummaryBytes = 200

// oneLine makes s fit on one line: control characters become spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// fitSummary builds "<head><quoted><tail>" within MaxSummaryBytes, cutting
// the quoted part (a regex, a prompt, a text) on a rune boundary first, so
// the bounds at the tail always show.
func fitSummary(head, quoted, tail string) string {
	head, quoted, tail = oneLine(head), oneLine(quoted), oneLine(tail)
	room := MaxSummaryBytes - len(head) - len(tail) - 2 // the quotes
	if room < 8 {
		return TruncateUTF8(head+tail, MaxSummaryBytes)
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
// `wait_for kubectl_get until matches "Running" (every 2 s, ≤300 s)`, at
// most MaxSummaryBytes (a long regex is cut, the bounds stay).
func WaitForSummary(s WaitForSpec) string {
	bounds := fmt.Sprintf(" (every %d s, ≤%d s)", s.PollSec, s.MaxWaitSec)
	if s.Until.FailPattern != "" {
		bounds = ", fail_matches set" + bounds
	}
	head := "wait_for " + shortTool(s.Probe.Tool) + " until "
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

// WaitForDetails is a wait_for's StaticDetails: the whole call in Markdown.
func WaitForDetails(s WaitForSpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### wait_for\n\nProbe `%s` every %d s, at most %d s.\n\n", s.Probe.Tool, s.PollSec, s.MaxWaitSec)
	b.WriteString("```json\n")
	call, _ := json.MarshalIndent(WaitForMemo(s), "", "  ")
	b.Write(call)
	b.WriteString("\n```\n")
	return b.String()
}

// WaitForMemo is a wait_for's memo: its arguments in the tool's own names
// (probe.tool, probe.args, until.matches / not_matches / quiet_for_sec /
// fail_matches, poll_sec, max_wait_sec in seconds).
func WaitForMemo(s WaitForSpec) map[string]any {
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
	return map[string]any{
		"probe":        map[string]any{"tool": s.Probe.Tool, "args": args},
		"until":        until,
		"poll_sec":     s.PollSec,
		"max_wait_sec": s.MaxWaitSec,
	}
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
	call, _ := json.MarshalIndent(TextWaitMemo(s, maxWaitSec), "", "  ")
	return fmt.Sprintf("### wait_for_text\n\nWatch tmux pane `%s` for the text, at most %d s.\n\n```json\n%s\n```\n",
		s.Target.PaneID, maxWaitSec, call)
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
	call, _ := json.MarshalIndent(AgentMemo(s), "", "  ")
	return fmt.Sprintf("### start_agent\n\nRun the `%s` CLI in `%s`, at most %d s.\n\n```json\n%s\n```\n",
		s.Provider, s.Cwd, maxRunSec, call)
}
