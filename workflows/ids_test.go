package workflows

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrincipalScopedIDs(t *testing.T) {
	assert.Equal(t, "agent/abc", scopedID(AgentIDPrefix, "", "abc"))
	a := scopedID(AgentIDPrefix, "alice", "abc")
	b := scopedID(AgentIDPrefix, "bob", "abc")
	assert.NotEqual(t, a, b)
	assert.True(t, strings.HasPrefix(a, "agent/p"))
	cases := []struct {
		principal, id string
		owns          bool
	}{
		{"", "agent/abc", true},
		{"", a, false},
		{"alice", a, true},
		{"bob", a, false},
		{"alice", "agent/abc", false},
		{"alice", scopedID(WaitForIDPrefix, "alice", "h"), true},
		{"bob", scopedID(WaitForTextIDPrefix, "alice", "h"), false},
		{"", "noslash", false},
	}
	for _, c := range cases {
		assert.Equal(t, c.owns, Owns(c.principal, c.id), "%q owns %q", c.principal, c.id)
	}
}

func TestInvocationIDCarriesItsNonceAndPrincipal(t *testing.T) {
	nonce := [16]byte{0x01, 0x23, 0xab, 0xcd}
	id := InvocationID("", nonce)
	assert.Equal(t, "agent/0123abcd000000000000000000000000", id)
	got, err := ParseInvocationID(json.RawMessage(`{"invocation_id":"` + id + `"}`))
	require.NoError(t, err)
	assert.Equal(t, id, got, "wait_agent accepts the ID start_agent returns")

	alice := InvocationID("alice", nonce)
	assert.True(t, strings.HasPrefix(alice, AgentIDPrefix+ownerTag("alice")+"/"), alice)
	assert.True(t, Owns("alice", alice))
	assert.False(t, Owns("", alice))
}

func TestTextWaitIDIsTheSameForTheSameCall(t *testing.T) {
	spec := TextWaitSpec{Target: PaneTarget{PaneID: "%3", Generation: "g1:ab"}, Text: "done"}
	id := spec.WorkflowID("", "")
	assert.True(t, strings.HasPrefix(id, WaitForTextIDPrefix), id)
	assert.Len(t, strings.TrimPrefix(id, WaitForTextIDPrefix), 24)
	assert.Equal(t, id, spec.WorkflowID("", ""), "a repeated call attaches")

	other := spec
	other.Text = "ready"
	assert.NotEqual(t, id, other.WorkflowID("", ""))
	assert.NotEqual(t, id, spec.WorkflowID("/tmp/other.sock", ""), "another tmux server is another wait")
	alice := spec.WorkflowID("", "alice")
	assert.NotEqual(t, id, alice, "principals do not share waits")
	assert.True(t, Owns("alice", alice))
}

// A repeated call attaches to a running wait only if its ID is byte for byte
// the one an earlier release derived: these values are the previous
// release's (computed by its code) and must never change.
func TestWaitIDsAreStableAcrossReleases(t *testing.T) {
	w := WaitForSpec{Probe: Probe{Tool: "k8s.kubectl_get", Args: json.RawMessage(`{"name":"web"}`)},
		Until: Until{Kind: ConditionMatches, Pattern: "Running"}, PollSec: 2, MaxWaitSec: 60}
	assert.Equal(t, "wait_for/c3a3a329a2d324c8799dc752", w.WorkflowID(""))
	assert.Equal(t, "wait_for/p7f8f73a5051901a2acae5454/4bf8bc1ada13b3b0aa4629d7", w.WorkflowID("alice"))

	x := TextWaitSpec{Target: PaneTarget{PaneID: "%3", Generation: "g1:ab"}, Text: "done"}
	assert.Equal(t, "wait_for_text/c12e83ef900f46f8dde1ea6b", x.WorkflowID("", ""))
	assert.Equal(t, "wait_for_text/p7f8f73a5051901a2acae5454/59a5305f9dd7d5b3b0a3d7f7", x.WorkflowID("/tmp/s", "alice"))
}
