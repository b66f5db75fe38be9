package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nodeClientDir holds the official MCP TypeScript SDK client script.
const nodeClientDir = "nodeclient"

var npmOnce sync.Once

// nodeClient runs client.mjs with args and decodes its report.
func nodeClient(t *testing.T, args ...string) nodeReport {
	t.Helper()
	var rep nodeReport
	nodeScript(t, &rep, "client.mjs", args...)
	return rep
}

// nodeScript runs one of the official MCP TypeScript SDK client scripts
// with args and decodes the JSON report it prints into report. It installs
// the SDK (npm ci, from the committed lock file) on first use.
func nodeScript(t *testing.T, report any, script string, args ...string) {
	t.Helper()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed for the official-SDK client tests (.ci/run installs it)")
	npmOnce.Do(func() {
		if _, err := os.Stat(filepath.Join(nodeClientDir, "node_modules", "@modelcontextprotocol", "sdk")); err == nil {
			return
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = nodeClientDir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "npm ci: %s", out)
	})
	cmd := exec.Command(node, append([]string{script}, args...)...)
	cmd.Dir = nodeClientDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node %s: %s", script, stderr.String())
	require.NoError(t, json.Unmarshal(out, report), "node %s printed: %s", script, out)
}

type nodeReport struct {
	Tools              []string       `json:"tools"`
	WaitForAnnotations map[string]any `json:"waitForAnnotations"`
	ReadFile           string         `json:"readFile"`
	Wait               waitResult     `json:"wait"`
	WaitIsError        bool           `json:"waitIsError"`
	Progress           int            `json:"progress"`
	Invalid            struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"invalid"`
}

func checkNodeReport(t *testing.T, rep nodeReport) {
	t.Helper()
	assert.Contains(t, rep.Tools, "wait_for")
	assert.Contains(t, rep.Tools, "read_file")
	assert.Equal(t, map[string]any{
		"title": "Wait for a probe's condition", "readOnlyHint": true, "destructiveHint": false,
		"idempotentHint": true, "openWorldHint": true,
	}, rep.WaitForAnnotations)
	assert.Equal(t, "starting", rep.ReadFile)
	require.False(t, rep.WaitIsError)
	assert.Equal(t, "matched", rep.Wait.Reason)
	assert.Equal(t, "READY", rep.Wait.LastObservation)
	assert.GreaterOrEqual(t, rep.Wait.Samples, 2)
	assert.GreaterOrEqual(t, rep.Progress, 1, "progress notifications reach the SDK's onprogress")
	assert.True(t, rep.Invalid.IsError)
	assert.Contains(t, rep.Invalid.Text, "until: must hold exactly one of matches, not_matches or quiet_for_sec (it holds none)")
}

func TestOfficialTypeScriptSDKClientOverHTTP(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	checkNodeReport(t, nodeClient(t, "http", "http://"+inst.http+"/mcp", w.path("status")))
}

func TestOfficialTypeScriptSDKClientOverStdio(t *testing.T) {
	w := newWorkspace(t)
	w.killDaemonAtCleanup() // the stdio process bridges to a daemon it starts
	config := w.writeConfig(w.demoServer("demo"))
	checkNodeReport(t, nodeClient(t, "stdio", bin.durawait, config, w.path("status")))
}
