package mcpfront

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/workflows"
)

func annotated(name string, readOnly, destructive *bool) mcp.Tool {
	t := mcp.NewTool(name)
	t.Annotations.ReadOnlyHint = readOnly
	t.Annotations.DestructiveHint = destructive
	return t
}

// policyDownstream: "files" has a read-only, a destructive and an
// unannotated tool; "hidden" is probe-only (expose = false).
func policyDownstream() fakeDownstream {
	yes, no := mcp.ToBoolPtr(true), mcp.ToBoolPtr(false)
	return fakeDownstream{
		order:  []string{"files", "hidden"},
		expose: map[string]bool{"files": true, "hidden": false},
		defs: map[string][]mcp.Tool{
			"files": {
				annotated("read_file", yes, no),
				annotated("delete_file", no, yes),
				annotated("touch", nil, nil),
				annotated("sync", yes, yes),
			},
			"hidden": {annotated("secret_status", yes, no), annotated("wipe", no, yes)},
		},
	}
}

func TestProbePolicy(t *testing.T) {
	const howTo = `; wait_for is read-only, so it probes only read-only tools unless the server allows more: `
	cases := []struct {
		name   string
		policy probePolicy
		tool   string
		err    string // empty: allowed
	}{
		{"read-only is allowed", nil, "read_file", ""},
		{"read-only, qualified", nil, "files.read_file", ""},
		{"destructive is refused with the how-to", nil, "delete_file",
			`files.delete_file is annotated destructiveHint: true and not readOnlyHint: true` + howTo +
				`add probe_tools = ["delete_file"] (or probe_tools = ["*"] for all of its tools) to the [[mcp_servers]] entry with name = "files" in durawait's config`},
		{"read-only and destructive at once is refused as destructive", nil, "sync",
			`files.sync is annotated both readOnlyHint: true and destructiveHint: true, which contradict each other, so durawait takes it as destructive` + howTo +
				`add probe_tools = ["sync"]`},
		{"read-only and destructive at once, allowed by name", probePolicy{"files": {"sync"}}, "sync", ""},
		{"unannotated is refused", nil, "touch", `files.touch is not annotated readOnlyHint: true` + howTo},
		{"allowed by name", probePolicy{"files": {"delete_file"}}, "delete_file", ""},
		{"allowing one name allows no other", probePolicy{"files": {"delete_file"}}, "touch", "files.touch is not annotated"},
		{"allowed wholesale", probePolicy{"files": {ProbeAllTools}}, "touch", ""},
		{"another server's allowance does not count", probePolicy{"hidden": {ProbeAllTools}}, "delete_file", "files.delete_file is annotated destructiveHint"},
		{"expose = false stays probeable", nil, "secret_status", ""},
		{"expose = false follows the same rule", nil, "hidden.wipe", `add probe_tools = ["wipe"]`},
		{"expose = false allowed by name", probePolicy{"hidden": {"wipe"}}, "wipe", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := catalogOf(t, policyDownstream(), tc.policy)
			got, err := c.ResolveProbeTool(tc.tool)
			if tc.err == "" {
				require.NoError(t, err)
				assert.Contains(t, []string{tc.tool, "files." + tc.tool, "hidden." + tc.tool}, got)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// A refused probe is a probe.tool error of wait_for: nothing starts.
func TestParseWaitForRefusesADestructiveProbe(t *testing.T) {
	c := catalogOf(t, policyDownstream(), nil)
	_, err := workflows.ParseWaitFor(json.RawMessage(`{"probe":{"tool":"delete_file","args":{"path":"/tmp/x"}},"until":{"matches":"x"}}`), c)
	var verr *workflows.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Len(t, verr.Errors, 1)
	assert.Equal(t, "probe.tool", verr.Errors[0].Field)
	assert.Contains(t, verr.Errors[0].Rule, `probe_tools = ["delete_file"]`)
}
