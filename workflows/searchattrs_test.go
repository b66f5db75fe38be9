package workflows

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/durawait/durawait/internal/auth"
)

// The name shown for the local user is the one auth reserves, so no
// configured principal can pass for the local user in the Temporal UI or in
// a filter on DurawaitCaller.
func TestCallerAnonymousIsTheNameAuthReserves(t *testing.T) {
	assert.Equal(t, auth.LocalName, CallerAnonymous)
	assert.Equal(t, CallerAnonymous, CallerValue(auth.Local))
}

// upserts records what a workflow upserts: its DurawaitState and
// DurawaitAgentStatus after each upsert of them ("-" when unset), and each
// DurawaitHost it says.
type upserts struct{ states, agentStatuses, hosts []string }

func recordUpserts(env *testsuite.TestWorkflowEnvironment) *upserts {
	u := &upserts{}
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		get := func(k temporal.SearchAttributeKeyKeyword) string {
			if v, ok := sa.GetKeyword(k); ok {
				return v
			}
			return "-"
		}
		if host := get(KeyHost); host != "-" {
			u.hosts = append(u.hosts, host)
			if sa.Size() == 1 {
				return
			}
		}
		u.states = append(u.states, get(KeyState))
		u.agentStatuses = append(u.agentStatuses, get(KeyAgentStatus))
	}).Return(nil)
	return u
}

func TestSearchAttributesAreKeywordsWithTheSharedNames(t *testing.T) {
	want := []string{"DurawaitTool", "DurawaitState", "DurawaitProbeTool", "DurawaitCaller", "DurawaitClient",
		"DurawaitSession", "DurawaitAgentProvider", "DurawaitAgentStatus", "DurawaitHost", "DurawaitTarget"}
	assert.Equal(t, want, SearchAttributeNames)
	attrs := SearchAttributes()
	assert.Len(t, attrs, len(want))
	for _, name := range want {
		assert.Equal(t, enumspb.INDEXED_VALUE_TYPE_KEYWORD, attrs[name], name)
	}
	assert.Equal(t, "anonymous", CallerValue(""))
	assert.Equal(t, "alice", CallerValue("alice"))
}

func TestWaitForUpsertsRunningThenHowItEnded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		result WaitForResult
		err    error
		want   WaitState
	}{
		{"matched", WaitForResult{Reason: WaitReasonMatched}, nil, StateMatched},
		{"settled", WaitForResult{Reason: WaitReasonSettled}, nil, StateSettled},
		{"timeout", WaitForResult{Reason: WaitReasonTimeout}, nil, StateTimeout},
		{"failed", WaitForResult{Reason: WaitReasonFailed}, nil, StateFailed},
		{"error", WaitForResult{}, temporal.NewNonRetryableApplicationError("probe failed", ErrTypeProbeReturnedError, nil), StateError},
		{"no host answered", WaitForResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil), StateError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			u := recordUpserts(env)
			env.OnActivity(PollProbeActivityName, mock.Anything, mock.Anything).Return(tc.result, tc.err)
			env.ExecuteWorkflow(WaitForWorkflowName, WaitForInput{Spec: testSpec(60)})
			require.True(t, env.IsWorkflowCompleted())
			assert.Equal(t, []string{"running", string(tc.want)}, u.states)
		})
	}
}

func TestAnOperatorsCancelEndsWaitForAsCanceledWithStateCancelled(t *testing.T) {
	env := newEnv(t)
	u := recordUpserts(env)
	env.OnActivity(PollProbeActivityName, mock.Anything, mock.Anything).After(time.Minute).Return(WaitForResult{Reason: WaitReasonMatched}, nil)
	env.OnActivity(StopLoopActivityName, mock.Anything, mock.Anything).Return(nil)
	env.RegisterDelayedCallback(env.CancelWorkflow, 10*time.Second)
	env.ExecuteWorkflow(WaitForWorkflowName, WaitForInput{Spec: testSpec(60)})
	require.True(t, env.IsWorkflowCompleted())
	var canceled *temporal.CanceledError
	require.ErrorAs(t, env.GetWorkflowError(), &canceled, "the workflow ends Canceled, not Completed")
	assert.Equal(t, []string{"running", "cancelled"}, u.states)
}

func watchPaneStub(context.Context, WatchPaneInput) (TextWaitOutcome, error) { panic("mocked") }

// claimPaneHostStub is the worker on the tmux host: host "tmux-host".
func claimPaneHostStub(context.Context) (string, error) { return "tmux-host", nil }

func TestWaitForTextUpsertsRunningThenHowItEnded(t *testing.T) {
	spec := TextWaitSpec{Target: PaneTarget{PaneID: "%3", Generation: "g"}, Text: "ready"}
	for _, tc := range []struct {
		name string
		out  TextWaitOutcome
		want WaitState
	}{
		{"matched", TextWaitOutcome{Result: NewTextResult(spec, true, "output", "same")}, StateMatched},
		{"timeout", TextWaitOutcome{Result: NewTextResult(spec, false, "output", "same")}, StateTimeout},
		{"error", TextWaitOutcome{Error: &TextWaitError{Code: TextErrPaneDied}}, StateError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			env.RegisterWorkflowWithOptions(WaitForText, workflow.RegisterOptions{Name: WaitForTextWorkflowName})
			env.RegisterActivityWithOptions(watchPaneStub, activity.RegisterOptions{Name: WatchPaneActivityName})
			env.RegisterActivityWithOptions(claimPaneHostStub, activity.RegisterOptions{Name: ClaimPaneHostActivityName})
			u := recordUpserts(env)
			env.OnActivity(WatchPaneActivityName, mock.Anything, mock.Anything).Return(tc.out, nil)
			env.ExecuteWorkflow(WaitForTextWorkflowName, WaitForTextInput{Spec: spec, HostQueue: "q", MaxWait: time.Minute})
			require.True(t, env.IsWorkflowCompleted())
			assert.Equal(t, []string{"running", string(tc.want)}, u.states)
			assert.Equal(t, []string{"tmux-host"}, u.hosts, "the watch runs on the host that claimed it")
		})
	}
}

func TestAgentInvocationShowsItsStatusAsItChanges(t *testing.T) {
	t.Run("blocked, then succeeded", func(t *testing.T) {
		env := newAgentEnv(t)
		u := recordUpserts(env)
		env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(time.Minute).
			Return(AgentFinal{Status: AgentSucceeded}, nil)
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(AgentBlockerSignal, AgentError{Code: BlockerPermission, Message: "needs approval"})
		}, 10*time.Second)
		env.ExecuteWorkflow(AgentWorkflowName, agentInput)
		require.True(t, env.IsWorkflowCompleted())
		assert.Equal(t, []string{"running", "running", "matched"}, u.states)
		assert.Equal(t, []string{"running", "blocked", "succeeded"}, u.agentStatuses)
	})
	t.Run("failed to start", func(t *testing.T) {
		env := newAgentEnv(t)
		u := recordUpserts(env)
		env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).
			Return(AgentFinal{}, temporal.NewNonRetryableApplicationError("no such cwd", ErrTypeAgentInvalidCwd, nil))
		env.ExecuteWorkflow(AgentWorkflowName, agentInput)
		var failed *temporal.ApplicationError
		require.ErrorAs(t, env.GetWorkflowError(), &failed, "a failed run closes Failed, its payload in the failure's details")
		assert.Equal(t, AgentFailed, closedPayload(t, env).Status)
		assert.Equal(t, []string{"running", "failed"}, u.states)
		assert.Equal(t, []string{"running", "failed"}, u.agentStatuses)
	})
	t.Run("cancelled by an operator", func(t *testing.T) {
		env := newAgentEnv(t)
		u := recordUpserts(env)
		env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(time.Hour).
			Return(AgentFinal{}, temporal.NewCanceledError(AgentFinal{}))
		env.RegisterDelayedCallback(env.CancelWorkflow, 30*time.Second)
		env.ExecuteWorkflow(AgentWorkflowName, agentInput)
		var canceled *temporal.CanceledError
		require.ErrorAs(t, env.GetWorkflowError(), &canceled, "an operator's cancel ends it Canceled")
		var p InvocationPayload
		require.True(t, canceled.HasDetails())
		require.NoError(t, canceled.Details(&p), "the payload rides in the details")
		_, byCancelAgent := InvocationFromError(env.GetWorkflowError())
		assert.False(t, byCancelAgent, "an operator's cancel is told apart from cancel_agent's: its callers learn who cancelled")
		assert.Equal(t, AgentCancelled, p.Status)
		assert.Equal(t, AgentReasonFinished, p.Reason)
		assert.Equal(t, []string{"running", "cancelled"}, u.states)
		assert.Equal(t, []string{"running", "cancelled"}, u.agentStatuses)
	})
	t.Run("cancelled by cancel_agent", func(t *testing.T) {
		env := newAgentEnv(t)
		u := recordUpserts(env)
		env.OnActivity(RunAgentActivityName, mock.Anything, mock.Anything).After(time.Hour).
			Return(AgentFinal{}, temporal.NewCanceledError(AgentFinal{}))
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(AgentCancelSignal, nil) }, 30*time.Second)
		env.ExecuteWorkflow(AgentWorkflowName, agentInput)
		var canceled *temporal.CanceledError
		require.ErrorAs(t, env.GetWorkflowError(), &canceled, "cancel_agent closes it Canceled, its payload in the details")
		assert.Equal(t, AgentCancelled, closedPayload(t, env).Status)
		assert.Equal(t, []string{"running", "cancelled"}, u.states)
		assert.Equal(t, []string{"running", "cancelled"}, u.agentStatuses)
	})
}

func TestWaitForSummaryReadsAsASentenceWithinTheCap(t *testing.T) {
	spec := WaitForSpec{Probe: Probe{Tool: "k8s.kubectl_get", Args: []byte(`{"name":"web"}`)},
		Until: Until{Kind: ConditionMatches, Pattern: "Running"}, PollSec: 2, MaxWaitSec: 300}
	assert.Equal(t, `wait_for kubectl_get name=web until matches "Running" (every 2 s, ≤300 s)`, WaitForSummary(spec, false))
	assert.Equal(t, `wait_for kubectl_get name=… until matches "Running" (every 2 s, ≤300 s)`, WaitForSummary(spec, true))

	quiet := spec
	quiet.Until = Until{Kind: ConditionQuietForSec, QuietForSec: 30}
	assert.Equal(t, `wait_for kubectl_get name=web until quiet for 30 s (every 2 s, ≤300 s)`, WaitForSummary(quiet, false))

	long := spec
	long.Until = Until{Kind: ConditionNotMatches, Pattern: strings.Repeat("é|Pending\n", 400), FailPattern: "Crash"}
	s := WaitForSummary(long, false)
	assert.LessOrEqual(t, len(s), MaxSummaryBytes)
	assert.True(t, utf8.ValidString(s), "cut on a rune boundary")
	assert.NotContains(t, s, "\n", "one line")
	assert.True(t, strings.HasSuffix(s, `…", fail_matches set (every 2 s, ≤300 s)`), s)

	for _, text := range []string{strings.Repeat("日本", 400), strings.Repeat("x", 1024)} {
		ts := TextWaitSummary(TextWaitSpec{Target: PaneTarget{PaneID: "%12"}, Text: text}, 60)
		assert.LessOrEqual(t, len(ts), MaxSummaryBytes)
		assert.True(t, utf8.ValidString(ts))
		assert.True(t, strings.HasSuffix(ts, `…" (≤60 s)`), ts)
		as := AgentSummary(AgentSpec{Provider: "claude", Cwd: "/srv/work", Prompt: text})
		assert.LessOrEqual(t, len(as), MaxSummaryBytes)
		assert.True(t, utf8.ValidString(as))
	}
	assert.Equal(t, "ab…", TruncateUTF8("abcdef", 5))
	assert.Equal(t, "é…", TruncateUTF8("ééé", 5), "never half a rune")
}

func TestMemosUseTheToolsOwnArgumentNames(t *testing.T) {
	spec := WaitForSpec{Probe: Probe{Tool: "k8s.kubectl_get", Args: []byte(`{"name":"web"}`)},
		Until: Until{Kind: ConditionMatches, Pattern: "Running", FailPattern: "Crash"}, PollSec: 2, MaxWaitSec: 120}
	got, err := json.Marshal(WaitForMemo(spec, false))
	require.NoError(t, err)
	assert.JSONEq(t, `{"probe":{"tool":"k8s.kubectl_get","args":{"name":"web"}},
		"until":{"matches":"Running","fail_matches":"Crash"},"poll_sec":2,"max_wait_sec":120}`, string(got))
	assert.Contains(t, WaitForDetails(spec, false), "```json\n")
	assert.Contains(t, WaitForDetails(spec, false), `"matches": "Running"`)

	text, err := json.Marshal(TextWaitMemo(TextWaitSpec{Target: PaneTarget{PaneID: "%3", Generation: "g1"}, Text: "ready"}, 60))
	require.NoError(t, err)
	assert.JSONEq(t, `{"target":{"paneId":"%3","generation":"g1"},"text":"ready","max_wait_sec":60}`, string(text))

	agent, err := json.Marshal(AgentMemo(AgentSpec{Provider: "claude", Prompt: "fix it", Cwd: "/srv", Model: "opus"}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"provider":"claude","prompt":"fix it","cwd":"/srv","model":"opus"}`, string(agent))
}

// A Keyword value fits the SQL visibility stores' VARCHAR(255) columns,
// cut on a rune boundary.
func TestAKeywordValueFitsVarchar255(t *testing.T) {
	long := strings.Repeat("é", 300) // 600 bytes
	v := KeywordValue(long)
	assert.LessOrEqual(t, len(v), 255)
	assert.True(t, utf8.ValidString(v))
	assert.True(t, strings.HasSuffix(v, "…"))
	assert.Equal(t, "claude-code/2.1", KeywordValue("claude-code/2.1"))
	exact := strings.Repeat("a", 255)
	assert.Equal(t, exact, KeywordValue(exact))
}

// Details stay within Temporal's 20000-byte details limit as their payload
// encodes them, whatever the prompt or probe args: the JSON is cut, with a
// note.
func TestDetailsFitTemporalsLimit(t *testing.T) {
	const limit = 20000
	prompt := strings.Repeat("\"quote\" and \\ and a\nnew line\x01 ", 256<<10/30) // ~256 KiB, much of it escaped
	d := AgentDetails(AgentSpec{Provider: "claude", Cwd: "/srv", Prompt: prompt}, 3600)
	assert.LessOrEqual(t, encodedLen(d), limit)
	assert.True(t, utf8.ValidString(d))
	assert.True(t, strings.HasPrefix(d, "### start_agent\n\nRun the `claude` CLI in `/srv`, at most 3600 s.\n\n```json\n"))
	assert.Contains(t, d, "Cut to fit Temporal's details limit")

	args, err := json.Marshal(map[string]string{"blob": strings.Repeat("é", 40000)})
	require.NoError(t, err)
	d = WaitForDetails(WaitForSpec{Probe: Probe{Tool: "k8s.get", Args: args}, Until: Until{Kind: ConditionMatches, Pattern: "x"}, PollSec: 1, MaxWaitSec: 9}, false)
	assert.LessOrEqual(t, encodedLen(d), limit)
	assert.Contains(t, d, "Cut to fit")

	short := AgentDetails(AgentSpec{Provider: "claude", Cwd: "/srv", Prompt: "fix it"}, 60)
	assert.NotContains(t, short, "Cut to fit")
	assert.Contains(t, short, `"prompt": "fix it"`)
}

// A backtick in a pattern, text or cwd does not break the Markdown: the
// fence and code spans are longer than any run of backticks inside.
func TestBackticksDoNotBreakTheDetails(t *testing.T) {
	d := TextWaitDetails(TextWaitSpec{Target: PaneTarget{PaneID: "%3"}, Text: "```\n# done ````"}, 60)
	assert.Contains(t, d, "\n`````json\n")
	assert.True(t, strings.HasSuffix(d, "\n`````\n"))

	d = AgentDetails(AgentSpec{Provider: "claude", Cwd: "/srv/`odd`"}, 60)
	assert.Contains(t, d, "Run the `claude` CLI in `` /srv/`odd` ``, at most 60 s.")
	assert.Equal(t, "`` `x ``", codeSpan("`x"))
}

// A summary is one line: no C1 control (NEL) nor Unicode line or paragraph
// separator is left in it.
func TestASummaryIsOneLine(t *testing.T) {
	s := TextWaitSummary(TextWaitSpec{Target: PaneTarget{PaneID: "%3"}, Text: "a\u0085b\u2028c\u2029d\ne"}, 60)
	assert.Equal(t, `wait_for_text in pane %3 for "a b c d e" (≤60 s)`, s)
}

// The bounds show even when the head is long (a long probe tool name).
func TestASummaryKeepsItsBoundsAfterALongHead(t *testing.T) {
	spec := WaitForSpec{Probe: Probe{Tool: "k8s." + strings.Repeat("t", 195)},
		Until: Until{Kind: ConditionMatches, Pattern: "Running"}, PollSec: 2, MaxWaitSec: 300}
	s := WaitForSummary(spec, false)
	assert.LessOrEqual(t, len(s), MaxSummaryBytes)
	assert.True(t, strings.HasSuffix(s, `(every 2 s, ≤300 s)`), s)
	assert.True(t, utf8.ValidString(s))
}
