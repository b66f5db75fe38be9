package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestScreenshotOfTheUIList takes a screenshot of the Temporal UI's list of
// running waits (a wait_for, a wait_for_text, an agent and a timed-out
// wait) with headless Chromium into the file DURAWAIT_SCREENSHOT names
// (`make screenshot` writes docs/img/ui-list.png). Skipped without it.
func TestScreenshotOfTheUIList(t *testing.T) {
	out := os.Getenv("DURAWAIT_SCREENSHOT")
	if out == "" {
		t.Skip("set DURAWAIT_SCREENSHOT=FILE (make screenshot)")
	}
	chromium, err := exec.LookPath("chromium")
	require.NoError(t, err, "headless Chromium is needed (apt-get install -y chromium)")
	w := newOperatorWorld(t)
	tc := temporalClient(t, w.engine)
	c := w.inst.client(t)

	w.write("deploy", "Pending")
	w.write("short", "Pending")
	res := c.waitFor(t, readFileWait(w.path("short"), map[string]any{"max_wait_sec": 2}))
	require.Equal(t, "timeout", res.Reason)
	callInBackground(c, "wait_for", readFileWait(w.path("deploy"), map[string]any{
		"until": map[string]any{"matches": "rollout complete|deployment \"web\" successfully rolled out", "fail_matches": "CrashLoopBackOff|Error"},
	}))
	pane := listPanes(t, c)[0]
	callInBackground(c, "wait_for_text", map[string]any{
		"target": map[string]any{"paneId": pane.PaneID, "generation": pane.Generation}, "text": "BUILD SUCCESSFUL",
	})
	require.NoError(t, os.WriteFile(w.path("scripts/review.script"), []byte("@wait never\n"), 0o644))
	c.startAgent(t, "fake", "review", map[string]any{"cwd": w.path("work")})
	eventually(t, "three running waits", func() bool {
		return len(found(t, tc, `DurawaitState = "running"`)) == 3
	})

	query := `DurawaitTool IN ("wait_for", "wait_for_text", "start_agent")`
	list := fmt.Sprintf("%s/namespaces/default/workflows?query=%s", w.ui, url.QueryEscape(query))
	screenshot(t, chromium, w.dir, list, out, 700)

}

// screenshot renders page with headless Chromium into file.
func screenshot(t *testing.T, chromium, dir, page, file string, height int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	shot := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		fmt.Sprintf("--window-size=1600,%d", height), "--virtual-time-budget=15000", "--screenshot="+file, page)
	shot.Dir = dir
	b, err := shot.CombinedOutput()
	require.NoError(t, err, "chromium: %s", b)
	info, err := os.Stat(file)
	require.NoError(t, err)
	require.Greater(t, info.Size(), int64(10_000), "a rendered page, not a blank one")
	t.Logf("screenshot of %s in %s", page, file)
}
