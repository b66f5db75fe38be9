package namespace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/workflows"
)

// TestComposeSetupCreatesWhatTheCheckAsksFor keeps deploy/compose's
// namespace job in step with durawait: it must run exactly the lines
// CheckCluster prints for a namespace with none of the search attributes
// (for the script's namespace variable, and without connection flags: the
// job's CLI connects through TEMPORAL_ADDRESS), so a search attribute added
// to workflows fails here until the job creates it too.
func TestComposeSetupCreatesWhatTheCheckAsksFor(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "..", "deploy", "compose", "scripts", "setup-namespace.sh"))
	require.NoError(t, err)

	var got []string
	for _, line := range strings.Split(string(script), "\n") {
		if strings.HasPrefix(line, "temporal operator search-attribute create ") {
			got = append(got, line)
		}
	}
	want := strings.Split(strings.TrimSuffix(
		CreateLines(`"$ns"`, workflows.SearchAttributeNames, workflows.SearchAttributes(), ""), "\n"), "\n")
	assert.Equal(t, want, got)
}
