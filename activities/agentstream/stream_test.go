package agentstream

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/workflows"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// replay feeds a recorded stream through a parser into a State and returns
// it with the blockers in the order they were first seen.
func replay(t *testing.T, format, file string) (State, []string) {
	t.Helper()
	p, err := New(format, func() time.Time { return now })
	require.NoError(t, err)
	f, err := os.Open(filepath.Join("testdata", file))
	require.NoError(t, err)
	defer f.Close()
	var st State
	var woke []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		for _, ev := range p.Parse(sc.Bytes()) {
			if b := st.Apply(ev, now); b != nil {
				woke = append(woke, b.Code)
			}
		}
	}
	return st, woke
}

func TestClaudeStream(t *testing.T) {
	st, woke := replay(t, workflows.AgentFormatClaude, "claude.jsonl")
	assert.Equal(t, "c0ffee-1", st.Live.SessionID)
	assert.Equal(t, "The tests fail in pkg/x; I could not write the fix.", st.Live.Reply)
	require.NotNil(t, st.Live.Activity)
	assert.Equal(t, workflows.AgentActivity{Kind: "tool_call", State: "failed"}, *st.Live.Activity)
	// The failed Bash call and the api_retry are not blockers; the denied
	// Write is, once, though it shows twice (tool_result and result).
	assert.Equal(t, []string{workflows.BlockerPermission}, woke)

	out := st.Outcome(0)
	assert.Equal(t, workflows.AgentSucceeded, out.Status, "a run that finishes despite a denial succeeded")
	assert.Equal(t, "Tests fail in pkg/x; fix needs Write permission.", out.Output, "the result line is the final reply")
	assert.Equal(t, "c0ffee-1", out.SessionID)
}

func TestClaudeRateLimitAndAuth(t *testing.T) {
	p, _ := New(workflows.AgentFormatClaude, func() time.Time { return now })
	soon := now.Add(2 * time.Minute).Unix()
	later := now.Add(3 * time.Hour).Unix()
	evs := p.Parse([]byte(`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":` + itoa(soon) + `}}`))
	assert.Empty(t, evs, "a limit that resets within minutes is transient")
	evs = p.Parse([]byte(`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":` + itoa(later) + `,"rateLimitType":"five_hour"}}`))
	require.Len(t, evs, 1)
	assert.Equal(t, workflows.BlockerRateLimit, evs[0].Blocker.Code)
	assert.Contains(t, evs[0].Blocker.Message, "five_hour rate limit reached; resets at 2026-11-29T15:00:00Z")

	var st State
	for _, line := range []string{
		`{"type":"system","subtype":"init","session_id":"s1"}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"Invalid API key · Please run /login"}]}}`,
		`{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login","session_id":"s1"}`,
	} {
		for _, ev := range p.Parse([]byte(line)) {
			st.Apply(ev, now)
		}
	}
	out := st.Outcome(1)
	assert.Equal(t, workflows.AgentBlocked, out.Status)
	require.NotNil(t, out.Error)
	assert.Equal(t, workflows.BlockerAuth, out.Error.Code)
}

func TestClaudeQuestionIsABlocker(t *testing.T) {
	p, _ := New(workflows.AgentFormatClaude, time.Now)
	evs := p.Parse([]byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t9","name":"AskUserQuestion","input":{}}]}}`))
	var codes []string
	for _, ev := range evs {
		if ev.Blocker != nil {
			codes = append(codes, ev.Blocker.Code)
		}
	}
	assert.Equal(t, []string{workflows.BlockerQuestion}, codes)
}

func TestCodexStream(t *testing.T) {
	st, woke := replay(t, workflows.AgentFormatCodex, "codex.jsonl")
	assert.Equal(t, "0199a213-81c0-7800-8aa1-bbab2a035a53", st.Live.SessionID)
	assert.Equal(t, "Listed the repo; rm was declined.", st.Live.Reply)
	assert.Equal(t, []string{workflows.BlockerPermission}, woke, "a reconnect is not a blocker; a declined command is")
	assert.Equal(t, &workflows.AgentActivity{Kind: "command_execution", State: "declined", ToolName: "rm -rf build"}, st.Live.Activity)
	out := st.Outcome(0)
	assert.Equal(t, workflows.AgentSucceeded, out.Status)
	assert.Equal(t, "Listed the repo; rm was declined.", out.Output)
}

func TestCodexUsageLimitEndsBlocked(t *testing.T) {
	st, woke := replay(t, workflows.AgentFormatCodex, "codex-failed.jsonl")
	assert.Equal(t, []string{workflows.BlockerRateLimit}, woke)
	out := st.Outcome(1)
	assert.Equal(t, workflows.AgentBlocked, out.Status)
	assert.Equal(t, workflows.BlockerRateLimit, out.Error.Code)
	assert.Equal(t, "You've hit your usage limit. Try again in 4 days.", out.Error.Message)
}

func TestGeminiStream(t *testing.T) {
	st, woke := replay(t, workflows.AgentFormatGemini, "gemini.jsonl")
	assert.Equal(t, "gem-42", st.Live.SessionID)
	assert.Equal(t, "Build fixed.", st.Live.Reply, "deltas join; a tool call starts a new message")
	assert.Empty(t, woke, "a failed tool and a warning are not blockers")
	out := st.Outcome(0)
	assert.Equal(t, workflows.AgentSucceeded, out.Status)
	assert.Equal(t, "Build fixed.", out.Output)
}

func TestGeminiAuthFailure(t *testing.T) {
	st, woke := replay(t, workflows.AgentFormatGemini, "gemini-auth.jsonl")
	assert.Equal(t, []string{workflows.BlockerAuth}, woke)
	out := st.Outcome(41)
	assert.Equal(t, workflows.AgentBlocked, out.Status)
	assert.Equal(t, workflows.BlockerAuth, out.Error.Code)
}

func TestTextFormatExitStatusDecides(t *testing.T) {
	p, _ := New(workflows.AgentFormatText, time.Now)
	var st State
	for _, line := range []string{"working", "done: 3 files"} {
		for _, ev := range p.Parse([]byte(line)) {
			st.Apply(ev, now)
		}
	}
	assert.Equal(t, "working\ndone: 3 files", st.Live.Reply)
	assert.Equal(t, workflows.AgentSucceeded, st.Outcome(0).Status)
	failed := st.Outcome(3)
	assert.Equal(t, workflows.AgentFailed, failed.Status)
	assert.Equal(t, &workflows.AgentError{Code: workflows.ErrCodeExitStatus, Message: "the CLI exited with status 3"}, failed.Error)
}

func TestNoParserCrashesOnGarbage(t *testing.T) {
	lines := []string{"", "{", "[]", "null", `{"type":5}`, `{"type":"assistant","message":null}`,
		`{"type":"item.completed","item":null}`, `{"type":"result","permission_denials":"x"}`, strings.Repeat("{", 10000)}
	for _, format := range workflows.AgentFormats() {
		p, err := New(format, time.Now)
		require.NoError(t, err)
		for _, l := range lines {
			assert.NotPanics(t, func() { p.Parse([]byte(l)) }, "%s: %q", format, l)
		}
	}
	_, err := New("xml", time.Now)
	assert.EqualError(t, err, `unknown output format "xml" (known: claude-stream-json, codex-json, gemini-stream-json, text)`)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestClassifyEveryCategory(t *testing.T) {
	for msg, want := range map[string]string{
		"Claude requested permissions to use Bash, but you haven't granted it yet.": workflows.BlockerPermission,
		"command requires approval":                               workflows.BlockerPermission,
		"Invalid API key · Please run /login":                     workflows.BlockerAuth,
		"401 Unauthorized":                                        workflows.BlockerAuth,
		"Credit balance is too low":                               workflows.BlockerBilling,
		"insufficient_quota: check your plan and billing details": workflows.BlockerBilling,
		"Claude AI usage limit reached|1784283600":                workflows.BlockerRateLimit,
		"429 Too Many Requests":                                   workflows.BlockerRateLimit,
		"RESOURCE_EXHAUSTED":                                      workflows.BlockerRateLimit,
		"exit status 1":                                           "",
		"compilation failed: undefined: foo":                      "",
	} {
		assert.Equal(t, want, Classify(msg), msg)
	}
	assert.True(t, isRetry("stream disconnected - retrying turn (1/5)"))
	assert.True(t, isRetry("Reconnecting... 2/5"))
}

// finish folds a parser's end-of-run verdict into st, as the runner does when
// the CLI has exited.
func finish(p Parser, st *State) {
	if f, ok := p.(Finisher); ok {
		st.Apply(Event{Final: f.Finish()}, now)
	}
}

func TestTextFormatKeepsTheWholeOutputAsTheFinalReply(t *testing.T) {
	p, _ := New(workflows.AgentFormatText, time.Now)
	var st State
	var want []string
	for i := range 2000 { // about 20 KB: more than a running tail, less than the cap
		line := "line " + strconv.Itoa(i) + " of the report"
		want = append(want, line)
		for _, ev := range p.Parse([]byte(line)) {
			st.Apply(ev, now)
		}
	}
	assert.LessOrEqual(t, len(st.Live.Reply), 4*workflows.OutputTailChars, "the running reply stays small")
	assert.True(t, strings.HasSuffix(st.Live.Reply, "line 1999 of the report"))
	finish(p, &st)
	assert.Equal(t, strings.Join(want, "\n"), st.Outcome(0).Output)
}

func TestTextFormatCapsTheFinalReplyKeepingItsEnd(t *testing.T) {
	p, _ := New(workflows.AgentFormatText, time.Now)
	var st State
	line := strings.Repeat("y", 1023)
	total := 0
	for i := range 300 { // 300 KiB
		if i > 0 {
			total++ // the newline joining the lines
		}
		total += len(line)
		for _, ev := range p.Parse([]byte(line)) {
			st.Apply(ev, now)
		}
	}
	for _, ev := range p.Parse([]byte("THE END")) {
		st.Apply(ev, now)
	}
	total += 1 + len("THE END")
	finish(p, &st)
	out := st.Outcome(0).Output
	prefix := "[" + strconv.Itoa(total-MaxFinalOutputBytes) + " bytes cut]\n"
	assert.True(t, strings.HasPrefix(out, prefix), "the cut counts every byte dropped: %q", out[:40])
	assert.Equal(t, MaxFinalOutputBytes, len(out)-len(prefix))
	assert.True(t, strings.HasSuffix(out, "\nTHE END"))
}

// A CLI whose retries of its API (or reconnects) keep coming for the
// configured time is blocked with network_unavailable, once; anything
// else it says in between (a reply, a tool call) starts the time over, a
// line that only repeats its session does not, and silence after a retry
// is not counted (a retry that got through may be followed by minutes of
// thinking). A failed exit is blamed on the blocker only while the CLI
// had not got past it.
func TestARetryingCLIIsUnreachableAfterTheConfiguredTime(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	after := 3 * time.Minute
	var st State
	retry := func(at time.Duration) {
		st.Apply(Event{SessionID: "s1"}, t0.Add(at))
		st.Apply(Event{Activity: &workflows.AgentActivity{Kind: "reconnecting", State: "Reconnecting... 2/5"}}, t0.Add(at))
	}
	assert.Nil(t, st.Unreachable(t0.Add(time.Hour), after), "no retry: never")
	retry(0)
	assert.Nil(t, st.Unreachable(t0.Add(time.Hour), after), "one retry, then silence: not counted")
	retry(time.Minute)
	st.Apply(Event{Reply: "got through"}, t0.Add(2*time.Minute))
	retry(3 * time.Minute)
	assert.Nil(t, st.Unreachable(t0.Add(4*time.Minute), after), "a reply starts the time over")

	retry(4 * time.Minute)
	st.Apply(Event{SessionID: "s1"}, t0.Add(5*time.Minute))
	retry(6*time.Minute - time.Second)
	assert.Nil(t, st.Unreachable(t0.Add(6*time.Minute), after), "retries over 2m59s of the 3 minutes: not yet")
	retry(6 * time.Minute)
	b := st.Unreachable(t0.Add(6*time.Minute), after)
	require.NotNil(t, b, "retries since the one at 3 minutes, the session line between")
	assert.Equal(t, workflows.BlockerNetwork, b.Code)
	assert.Equal(t, "the CLI has not reached its model's API for 3m0s: it retries or waits for the network (last: reconnecting, Reconnecting... 2/5)", b.Message)
	retry(8 * time.Minute)
	assert.Nil(t, st.Unreachable(t0.Add(8*time.Minute), after), "once per run")
	assert.Nil(t, (&State{}).Unreachable(t0, 0), "0: never")

	out := st.Outcome(1)
	assert.Equal(t, workflows.AgentBlocked, out.Status, "a run that exits failing while unreachable ended because of it")
	assert.Equal(t, workflows.BlockerNetwork, out.Error.Code)

	st.Apply(Event{Reply: "back"}, t0.Add(9*time.Minute))
	out = st.Outcome(1)
	assert.Equal(t, workflows.AgentFailed, out.Status, "past the blocker, a failed exit is not the network's")
	assert.Equal(t, workflows.ErrCodeExitStatus, out.Error.Code)
}
