package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sixfold is the shape of the pathological pattern: [xy]x{n} six
// times, then z.
func sixfold(n int) string { return strings.Repeat(fmt.Sprintf("[xy]x{%d}", n), 6) + "z" }

func TestPatternInstructions(t *testing.T) {
	for _, tc := range []struct {
		pattern  string
		min, max int
	}{
		{"SUCCESS", 1, 20},
		{`(?i)error|fail(ed|ure)`, 1, 40},
		{`x{1000}`, 1000, 1010},
		{sixfold(999), 6000, 6010},
	} {
		n, err := PatternInstructions(tc.pattern)
		require.NoError(t, err, tc.pattern)
		assert.GreaterOrEqual(t, n, tc.min, tc.pattern)
		assert.LessOrEqual(t, n, tc.max, tc.pattern)
	}
	_, err := PatternInstructions("(")
	assert.Error(t, err)
}

// The program-size rule applies to every pattern field, names it and the
// limit, and lets ordinary patterns through.
func TestParseWaitForPatternLimits(t *testing.T) {
	const head = `{"probe":{"tool":"kubectl_get"},"until":`
	long := strings.Repeat("a", MaxPatternBytes+1)
	cases := []struct {
		name, until, field, message string
	}{
		{"issue's pattern in matches", fmt.Sprintf(`{"matches":%q}`, sixfold(999)), "until.matches",
			fmt.Sprintf("over the limit of %d", MaxPatternInstructions)},
		{"issue's pattern in not_matches", fmt.Sprintf(`{"not_matches":%q}`, sixfold(999)), "until.not_matches", "is too costly to match"},
		{"issue's pattern in fail_matches", fmt.Sprintf(`{"matches":"ok","fail_matches":%q}`, sixfold(999)), "until.fail_matches", "is too costly to match"},
		{"short but huge program", `{"matches":"(((a{100}){100}){100})"}`, "until.matches", "not a valid regular expression"},
		{"just over", `{"matches":"x{1000}y{1000}"}`, "until.matches", "compiles to 2002 instructions, over the limit of 2000"},
		{"pattern over the byte limit", fmt.Sprintf(`{"matches":%q}`, long), "until.matches",
			fmt.Sprintf("must be at most %d bytes (got %d)", MaxPatternBytes, MaxPatternBytes+1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, head+tc.until+`}`)
			var verr *ValidationError
			require.ErrorAs(t, err, &verr)
			require.Len(t, verr.Errors, 1, "%v", err)
			assert.Equal(t, tc.field, verr.Errors[0].Field)
			assert.Contains(t, verr.Errors[0].Rule, tc.message)
		})
	}
	for _, ok := range []string{"Running", `(?i)\b(error|failed|fatal)\b`, `x{1000}`, `^\s*ready: (\d+)/(\d+)$`, sixfold(330)} {
		_, err := parse(t, fmt.Sprintf(`%s{"matches":%q}}`, head, ok))
		assert.NoError(t, err, ok)
	}
}

func TestParseWaitForProbeLimits(t *testing.T) {
	bigArgs := fmt.Sprintf(`{"blob":%q}`, strings.Repeat("a", MaxProbeArgsBytes))
	_, err := parse(t, `{"probe":{"tool":"kubectl_get","args":`+bigArgs+`},"until":{"matches":"x"}}`)
	var verr *ValidationError
	require.ErrorAs(t, err, &verr)
	require.Len(t, verr.Errors, 1)
	assert.Equal(t, "probe.args", verr.Errors[0].Field)
	assert.Equal(t, fmt.Sprintf("must be at most %d bytes of JSON (got %d)", MaxProbeArgsBytes, len(bigArgs)), verr.Errors[0].Rule)

	fits := fmt.Sprintf(`{"blob":%q}`, strings.Repeat("a", MaxProbeArgsBytes-len(`{"blob":""}`)))
	_, err = parse(t, `{"probe":{"tool":"kubectl_get","args":`+fits+`},"until":{"matches":"x"}}`)
	assert.NoError(t, err, "exactly the limit is fine")

	_, err = parse(t, fmt.Sprintf(`{"probe":{"tool":%q},"until":{"matches":"x"}}`, strings.Repeat("t", MaxProbeToolBytes+1)))
	require.ErrorAs(t, err, &verr)
	assert.Equal(t, "probe.tool", verr.Errors[0].Field)
	assert.Contains(t, verr.Errors[0].Rule, "must be at most 256 bytes (got 257)")
}

func TestParseStartAgentLimits(t *testing.T) {
	limits := AgentLimits{Providers: []string{"claude"}, AllowedRoots: []string{"/work"}}
	for field, limit := range startAgentLimits {
		args := map[string]string{"provider": "claude", "prompt": "hi"}
		args[field] = "/work/" + strings.Repeat("a", limit)
		raw, _ := json.Marshal(args)
		_, err := ParseStartAgent(raw, limits)
		var verr *ValidationError
		require.ErrorAs(t, err, &verr, field)
		require.Len(t, verr.Errors, 1, "%v", err)
		assert.Equal(t, field, verr.Errors[0].Field)
		assert.Equal(t, fmt.Sprintf("must be at most %d bytes (got %d)", limit, limit+6), verr.Errors[0].Rule)
	}
	_, err := ParseInvocationID(json.RawMessage(fmt.Sprintf(`{"invocation_id":%q}`, AgentIDPrefix+strings.Repeat("a", MaxInvocationIDBytes))))
	assert.EqualError(t, err, fmt.Sprintf("invalid arguments: invocation_id: must be at most %d bytes (got %d)",
		MaxInvocationIDBytes, MaxInvocationIDBytes+len(AgentIDPrefix)))
}

// A match over a large output stops when its context ends.
func TestJudgeContextStopsAMatch(t *testing.T) {
	m, err := NewMatcher(WaitForSpec{Until: Until{Kind: ConditionMatches, Pattern: sixfold(330)}}, 0)
	require.NoError(t, err)
	p := PollProgress{HasObservation: true, LastObservation: strings.Repeat("x", MaxObservationBytes)}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, done, err := m.JudgeContext(ctx, p, time.Now())
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, done)

	// Over a large output, the reader path finds what the string path finds.
	big := strings.Repeat("x", MaxObservationBytes-5) + "READY"
	m, err = NewMatcher(WaitForSpec{Until: Until{Kind: ConditionMatches, Pattern: `READY$`}}, 0)
	require.NoError(t, err)
	reason, _, done, err := m.JudgeContext(context.Background(), PollProgress{HasObservation: true, LastObservation: big}, time.Now())
	require.NoError(t, err)
	assert.True(t, done)
	assert.Equal(t, WaitReasonMatched, reason)
}
