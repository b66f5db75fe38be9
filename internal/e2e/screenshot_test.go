package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/internal/webui"
)

// screenshotEnv names the folder TestUIScreenshot writes its PNG files to
// (`make screenshot` sets it to docs/img); unset, they go to a temporary
// folder and only the test's assertions count.
const screenshotEnv = "DURAWAIT_SCREENSHOTS"

// operatorQuery is the saved view docs/temporal-ui.md recommends: every
// wait_for still waiting.
const operatorQuery = `DurawaitTool = "wait_for" AND DurawaitState = "running" AND ExecutionStatus = "Running"`

// operatorViewName is the saved view's name in the UI.
const operatorViewName = "Waiting now"

// operatorColumns are the list columns of the screenshot, in the UI's own
// format: the operator's search attributes beside the usual ones.
var operatorColumns = []map[string]string{
	{"label": "Status"}, {"label": "Workflow ID"}, {"label": "DurawaitTool"}, {"label": "DurawaitTarget"},
	{"label": "DurawaitState"}, {"label": "DurawaitCaller"}, {"label": "Start"},
}

// TestUIScreenshot takes the README's picture of the operator's view: a real
// `durawait serve` with its embedded Temporal UI, a few waits running, and
// the UI's workflow list filtered by the operator's saved query, rendered by
// headless Chromium (driven by playwright-core, internal/e2e/uishot). The
// list shows what each wait waits for (its DurawaitTarget column: the test
// waits for one wait's target text on the page), and a wait's page its
// summary with the probe's arguments.
func TestUIScreenshot(t *testing.T) {
	dir := os.Getenv(screenshotEnv)
	if dir == "" {
		dir = t.TempDir()
	}
	chromium, err := exec.LookPath("chromium")
	require.NoError(t, err, "headless Chromium is needed (apt-get install -y chromium)")

	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("ci"))
	uiAddr := freeAddr(t)
	_, uiPort, _ := strings.Cut(uiAddr, ":")
	inst := w.startServeWith(config, freeAddr(t), nil, "--ui-port", uiPort)
	c := inst.client(t)
	login := w.owner().UI
	_, uiHTTP := uiLogin(t, login)
	token := strings.SplitN(login, webui.TokenParam+"=", 2)[1]

	// Three waits that keep waiting, on different files and patterns, and
	// one that has already matched.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	require.NoError(t, os.WriteFile(w.path("ready"), []byte("READY\n"), 0o644))
	c.waitFor(t, readFileWait(w.path("ready"), nil))
	for i, pattern := range []string{"deployment .* rolled out", "READY", `build #\d+ passed`} {
		args := readFileWait(w.path(fmt.Sprintf("pending-%d", i)), map[string]any{
			"until": map[string]any{"matches": pattern}, "max_wait_sec": 300, "poll_sec": 2,
		})
		go func() { _, _ = c.call(ctx, "wait_for", args, "") }()
	}
	var running, runIDs []string
	eventually(t, "the UI lists three running waits", func() bool {
		resp, err := uiHTTP.Get(fmt.Sprintf("http://%s/api/v1/namespaces/default/workflows?query=%s", uiAddr, url.QueryEscape(operatorQuery)))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var page struct {
			Executions []struct {
				Execution struct {
					WorkflowID string `json:"workflowId"`
					RunID      string `json:"runId"`
				} `json:"execution"`
			} `json:"executions"`
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&page) != nil || len(page.Executions) != 3 {
			return false
		}
		running, runIDs = nil, nil
		for _, e := range page.Executions {
			running, runIDs = append(running, e.Execution.WorkflowID), append(runIDs, e.Execution.RunID)
		}
		return true
	})

	require.NoError(t, os.MkdirAll(dir, 0o755))
	columns, err := json.Marshal(operatorColumns)
	require.NoError(t, err)
	views, err := json.Marshal([]map[string]string{{"id": "durawait-waiting", "name": operatorViewName, "query": operatorQuery, "type": "user"}})
	require.NoError(t, err)
	shoot := func(name, page, text string) {
		t.Helper()
		out := filepath.Join(dir, name)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", "shot.mjs", page, out, "default", string(columns), string(views), text)
		cmd.Dir = "uishot"
		cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
		logs, err := cmd.CombinedOutput()
		require.NoError(t, err, "node shot.mjs (npm ci in internal/e2e/uishot first): %s", logs)
		info, err := os.Stat(out)
		require.NoError(t, err)
		require.Greater(t, info.Size(), int64(10_000), "the screenshot is suspiciously small: %s", logs)
		t.Logf("wrote %s (%d bytes) of %s", out, info.Size(), page)
	}
	ui := "http://" + uiAddr + "/namespaces/default/workflows"
	// Each page is opened through its login link, as a person would.
	login = "&" + webui.TokenParam + "=" + token
	// One wait's target, as its DurawaitTarget column shows it (its file's
	// path is cut in the middle when long: the condition is the tail).
	shoot("operator-view.png", ui+"?query="+url.QueryEscape(operatorQuery)+"&savedQuery="+url.QueryEscape(operatorViewName)+login,
		`matches build #\d+ passed`)
	// A wait's summary names its probe's arguments (its file).
	shoot("wait-detail.png", ui+"/"+url.PathEscape(running[0])+"/"+url.PathEscape(runIDs[0])+"/user-metadata?"+login[1:], "read_file path=")
}
