package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeTools resolves "kubectl_get" and "k8s.kubectl_get"; "wait_for" is native.
type fakeTools struct{}

func (fakeTools) ResolveProbeTool(name string) (string, error) {
	switch name {
	case "kubectl_get", "k8s.kubectl_get":
		return "k8s.kubectl_get", nil
	case "wait_for":
		return "", errors.New(`"wait_for" is one of durawait's own tools; native tools cannot be probed`)
	}
	return "", fmt.Errorf("no downstream MCP server exposes a tool named %q", name)
}

func parse(t *testing.T, args string) (WaitForSpec, error) {
	t.Helper()
	return ParseWaitFor(json.RawMessage(args), fakeTools{})
}

func TestParseWaitForDefaultsAndCanonicalForm(t *testing.T) {
	spec, err := parse(t, `{"probe":{"tool":"kubectl_get","args":{"b":1,"a":{"y":2,"x":1.50}}},"until":{"matches":"Running"}}`)
	require.NoError(t, err)
	assert.Equal(t, "k8s.kubectl_get", spec.Probe.Tool)
	assert.JSONEq(t, `{"a":{"x":1.50,"y":2},"b":1}`, string(spec.Probe.Args))
	assert.Equal(t, `{"a":{"x":1.50,"y":2},"b":1}`, string(spec.Probe.Args), "keys sorted, numbers kept as written")
	assert.Equal(t, Until{Kind: ConditionMatches, Pattern: "Running"}, spec.Until)
	assert.Equal(t, DefaultPollSec, spec.PollSec)
	assert.Equal(t, DefaultMaxWaitSec, spec.MaxWaitSec)
}

func TestParseWaitForMissingArgsIsEmptyObject(t *testing.T) {
	spec, err := parse(t, `{"probe":{"tool":"kubectl_get"},"until":{"quiet_for_sec":10},"poll_sec":1,"max_wait_sec":30}`)
	require.NoError(t, err)
	assert.Equal(t, "{}", string(spec.Probe.Args))
	assert.Equal(t, 10, spec.Until.QuietForSec)
	assert.Equal(t, 1, spec.PollSec)
	assert.Equal(t, 30, spec.MaxWaitSec)
}

func TestParseWaitForClampsMaxWait(t *testing.T) {
	spec, err := parse(t, `{"probe":{"tool":"kubectl_get"},"until":{"not_matches":"Pending"},"max_wait_sec":900}`)
	require.NoError(t, err)
	assert.Equal(t, MaxWaitCeilingSec, spec.MaxWaitSec)
	assert.Equal(t, ConditionNotMatches, spec.Until.Kind)
}

func TestParseWaitForFailMatches(t *testing.T) {
	spec, err := parse(t, `{"probe":{"tool":"kubectl_get"},"until":{"matches":"Running","fail_matches":"CrashLoop"}}`)
	require.NoError(t, err)
	assert.Equal(t, "CrashLoop", spec.Until.FailPattern)
}

// Every rule has its own message that names the field.
func TestParseWaitForRules(t *testing.T) {
	const okProbe = `"probe":{"tool":"kubectl_get"}`
	const okUntil = `"until":{"matches":"x"}`
	cases := []struct {
		name, args, field, message string
	}{
		{"arguments not an object", `[1]`, "arguments", "must be a JSON object (got an array)"},
		{"probe missing", `{` + okUntil + `}`, "probe", "is required"},
		{"probe not an object", `{"probe":"kubectl_get",` + okUntil + `}`, "probe", "must be a JSON object (got a string)"},
		{"probe tool missing", `{"probe":{},` + okUntil + `}`, "probe.tool", "is required"},
		{"probe tool empty", `{"probe":{"tool":""},` + okUntil + `}`, "probe.tool", "must not be empty"},
		{"probe tool blank", `{"probe":{"tool":"  "},` + okUntil + `}`, "probe.tool", "must not be empty"},
		{"probe tool not a string", `{"probe":{"tool":7},` + okUntil + `}`, "probe.tool", "must be a string"},
		{"probe tool unknown", `{"probe":{"tool":"nope"},` + okUntil + `}`, "probe.tool", `no downstream MCP server exposes a tool named "nope"`},
		{"probe tool native", `{"probe":{"tool":"wait_for"},` + okUntil + `}`, "probe.tool", "native tools cannot be probed"},
		{"args an array", `{"probe":{"tool":"kubectl_get","args":[]},` + okUntil + `}`, "probe.args", "must be a JSON object (got an array)"},
		{"args a string", `{"probe":{"tool":"kubectl_get","args":"-n x"},` + okUntil + `}`, "probe.args", "must be a JSON object (got a string)"},
		{"args null", `{"probe":{"tool":"kubectl_get","args":null},` + okUntil + `}`, "probe.args", "must be a JSON object (got null)"},
		{"unknown probe field", `{"probe":{"tool":"kubectl_get","server":"k8s"},` + okUntil + `}`, "probe.server", "unknown field"},
		{"until missing", `{` + okProbe + `}`, "until", "is required"},
		{"until empty", `{` + okProbe + `,"until":{}}`, "until", "exactly one of matches, not_matches or quiet_for_sec (it holds none)"},
		{"until only fail_matches", `{` + okProbe + `,"until":{"fail_matches":"x"}}`, "until", "(it holds none)"},
		{"until two keys", `{` + okProbe + `,"until":{"matches":"a","not_matches":"b"}}`, "until", "(it holds matches, not_matches)"},
		{"until three keys", `{` + okProbe + `,"until":{"matches":"a","not_matches":"b","quiet_for_sec":3}}`, "until", "(it holds matches, not_matches, quiet_for_sec)"},
		{"unknown until field", `{` + okProbe + `,"until":{"matches":"a","regex":"b"}}`, "until.regex", "unknown field"},
		{"invalid matches regex", `{` + okProbe + `,"until":{"matches":"(unclosed"}}`, "until.matches", "is not a valid regular expression"},
		{"invalid not_matches regex", `{` + okProbe + `,"until":{"not_matches":"a**"}}`, "until.not_matches", "is not a valid regular expression"},
		{"backreference is not RE2", `{` + okProbe + `,"until":{"matches":"(a)\\1"}}`, "until.matches", "is not a valid regular expression"},
		{"invalid fail_matches regex", `{` + okProbe + `,"until":{"matches":"a","fail_matches":"["}}`, "until.fail_matches", "is not a valid regular expression"},
		{"empty regex", `{` + okProbe + `,"until":{"matches":""}}`, "until.matches", "must not be empty"},
		{"regex not a string", `{` + okProbe + `,"until":{"matches":5}}`, "until.matches", "must be a string"},
		{"zero quiet_for_sec", `{` + okProbe + `,"until":{"quiet_for_sec":0}}`, "until.quiet_for_sec", "must be greater than zero (got 0)"},
		{"negative quiet_for_sec", `{` + okProbe + `,"until":{"quiet_for_sec":-5}}`, "until.quiet_for_sec", "must be greater than zero (got -5)"},
		{"fractional quiet_for_sec", `{` + okProbe + `,"until":{"quiet_for_sec":1.5}}`, "until.quiet_for_sec", "must be a whole number of seconds (got 1.5)"},
		{"quiet_for_sec over max_wait_sec", `{` + okProbe + `,"until":{"quiet_for_sec":61},"max_wait_sec":60}`, "until.quiet_for_sec", "61 must not exceed max_wait_sec 60"},
		{"quiet_for_sec over clamped max_wait_sec", `{` + okProbe + `,"until":{"quiet_for_sec":400},"max_wait_sec":600}`, "until.quiet_for_sec", "400 must not exceed max_wait_sec 300"},
		{"zero poll_sec", `{` + okProbe + `,` + okUntil + `,"poll_sec":0}`, "poll_sec", "must be greater than zero (got 0)"},
		{"string poll_sec", `{` + okProbe + `,` + okUntil + `,"poll_sec":"2"}`, "poll_sec", "must be a whole number of seconds"},
		{"zero max_wait_sec", `{` + okProbe + `,` + okUntil + `,"max_wait_sec":0}`, "max_wait_sec", "must be greater than zero (got 0)"},
		{"poll_sec equals max_wait_sec", `{` + okProbe + `,` + okUntil + `,"poll_sec":10,"max_wait_sec":10}`, "poll_sec", "poll_sec 10 must be less than max_wait_sec 10"},
		{"poll_sec over clamped max_wait_sec", `{` + okProbe + `,` + okUntil + `,"poll_sec":301,"max_wait_sec":1000}`, "poll_sec", "poll_sec 301 must be less than max_wait_sec 300"},
		{"default poll_sec against tiny max_wait_sec", `{` + okProbe + `,` + okUntil + `,"max_wait_sec":2}`, "poll_sec", "poll_sec (default) 2 must be less than max_wait_sec 2"},
		{"unknown top-level field", `{` + okProbe + `,` + okUntil + `,"timeout":5}`, "timeout", "unknown field (allowed here: probe, until, poll_sec, max_wait_sec, wake_on_event)"},
		{"wake_on_event not an event name", `{` + okProbe + `,` + okUntil + `,"wake_on_event":"ci/done"}`, "wake_on_event", `"ci/done" must match`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.args)
			require.Error(t, err)
			var verr *ValidationError
			require.ErrorAs(t, err, &verr)
			var found *FieldError
			for _, fe := range verr.Errors {
				if fe.Field == tc.field {
					found = fe
				}
			}
			require.NotNil(t, found, "no error for field %s in %v", tc.field, err)
			assert.Contains(t, found.Rule, tc.message)
			assert.Contains(t, err.Error(), tc.field+": ")
		})
	}
}

func TestParseWaitForReportsEveryBrokenRule(t *testing.T) {
	_, err := parse(t, `{"probe":{"tool":""},"until":{"matches":"("},"poll_sec":0,"extra":1}`)
	var verr *ValidationError
	require.ErrorAs(t, err, &verr)
	var fields []string
	for _, fe := range verr.Errors {
		fields = append(fields, fe.Field)
	}
	assert.ElementsMatch(t, []string{"extra", "probe.tool", "poll_sec", "until.matches"}, fields)
	assert.True(t, strings.HasPrefix(err.Error(), "invalid arguments: "))
}

func TestWorkflowIDIdentifiesTheWait(t *testing.T) {
	a, err := parse(t, `{"probe":{"tool":"kubectl_get","args":{"ns":"a","name":"b"}},"until":{"matches":"x"}}`)
	require.NoError(t, err)
	sameOtherOrder, err := parse(t, `{"until":{"matches":"x"},"probe":{"args":{"name":"b","ns":"a"},"tool":"k8s.kubectl_get"}}`)
	require.NoError(t, err)
	otherArgs, err := parse(t, `{"probe":{"tool":"kubectl_get","args":{"ns":"a","name":"c"}},"until":{"matches":"x"}}`)
	require.NoError(t, err)
	otherBound, err := parse(t, `{"probe":{"tool":"kubectl_get","args":{"ns":"a","name":"b"}},"until":{"matches":"x"},"max_wait_sec":60}`)
	require.NoError(t, err)

	id := a.WorkflowID("")
	assert.True(t, strings.HasPrefix(id, "wait_for/"))
	assert.Equal(t, id, sameOtherOrder.WorkflowID(""), "the short and the <server>.<tool> form, in any key order, are one wait")
	assert.NotEqual(t, id, otherArgs.WorkflowID(""))
	assert.NotEqual(t, id, otherBound.WorkflowID(""))
	assert.NotEqual(t, id, a.WorkflowID("alice"), "principals do not share waits")
}
