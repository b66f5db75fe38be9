package workflows

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestAWaitForsTargetNamesItsProbeArgumentsAndCondition(t *testing.T) {
	spec := WaitForSpec{
		Probe: Probe{Tool: "demo.read_file", Args: json.RawMessage(`{"path":"build/status","tail":20,"opts":{"a":1},"ids":[1,2],"note":"two words"}`)},
		Until: Until{Kind: ConditionMatches, Pattern: "^SUCCESS"},
	}
	assert.Equal(t, `demo.read_file ids=[…] note="two words" opts={…} path=build/status tail=20 matches ^SUCCESS`, WaitForTarget(spec, false))
	assert.Equal(t, `demo.read_file ids=… note=… opts=… path=… tail=… matches ^SUCCESS`, WaitForTarget(spec, true),
		"hidden values show the names only")

	quiet := WaitForSpec{Probe: Probe{Tool: "k8s.logs"}, Until: Until{Kind: ConditionQuietForSec, QuietForSec: 30}}
	assert.Equal(t, `k8s.logs quiet_for_sec 30`, WaitForTarget(quiet, false), "no arguments, no pairs")

	assert.Equal(t, `tmux pane %3 contains "BUILD OK"`, TextWaitTarget(TextWaitSpec{Target: PaneTarget{PaneID: "%3"}, Text: "BUILD OK"}))
	assert.Equal(t, `agent claude in /srv/app`, AgentTarget(AgentSpec{Provider: "claude", Cwd: "/srv/app", Prompt: "a secret plan"}),
		"an agent's prompt is not its target")
}

// A target fits a Keyword column: each value is cut in its middle (a path's
// file name stays), the whole line is bounded, on rune boundaries, on one
// line.
func TestATargetIsBoundedAndOnOneLine(t *testing.T) {
	long := "/var/lib/builds/" + strings.Repeat("é", 60) + "/status-of-build-42"
	args, _ := json.Marshal(map[string]string{"path": long})
	got := WaitForTarget(WaitForSpec{Probe: Probe{Tool: "demo.read_file", Args: args}, Until: Until{Kind: ConditionMatches, Pattern: "x\ny"}}, false)
	assert.True(t, utf8.ValidString(got))
	assert.NotContains(t, got, "\n")
	assert.Contains(t, got, "status-of-build-42", "the value's end stays")
	assert.Contains(t, got, "path=/var/lib/", "the value's start stays")
	value := strings.TrimSuffix(strings.TrimPrefix(got, "demo.read_file path="), " matches x y")
	assert.LessOrEqual(t, len(value), maxArgValueBytes)

	many := map[string]string{}
	for _, k := range strings.Split("abcdefghijklmnopqrstuvwxyz", "") {
		many[k] = strings.Repeat(k, 40)
	}
	args, _ = json.Marshal(many)
	got = WaitForTarget(WaitForSpec{Probe: Probe{Tool: "demo.read_file", Args: args}, Until: Until{Kind: ConditionMatches, Pattern: "x"}}, false)
	assert.LessOrEqual(t, len(got), MaxTargetBytes)
	assert.True(t, utf8.ValidString(got))
}

// With hidden values, the memo and details keep the argument names and
// never a value.
func TestHiddenArgumentValuesLeaveTheMemoAndDetails(t *testing.T) {
	spec := WaitForSpec{Probe: Probe{Tool: "ci.get", Args: json.RawMessage(`{"token":"s3cr3t","job":"deploy"}`)},
		Until: Until{Kind: ConditionMatches, Pattern: "done"}, PollSec: 2, MaxWaitSec: 60}
	memo, err := json.Marshal(WaitForMemo(spec, true))
	assert.NoError(t, err)
	for _, shown := range []string{string(memo), WaitForDetails(spec, true), WaitForSummary(spec, true), WaitForTarget(spec, true)} {
		assert.NotContains(t, shown, "s3cr3t")
		assert.NotContains(t, shown, "deploy")
		assert.Contains(t, shown, "token")
	}
	assert.Contains(t, WaitForTarget(spec, false), "token=s3cr3t", "shown unless hidden")
}
