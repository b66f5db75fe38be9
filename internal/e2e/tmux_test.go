package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tmuxWorld is a private tmux server (its own socket, never the user's) with
// one session whose pane runs a plain shell, and a durawait serving the
// tmux tools for it.
type tmuxWorld struct {
	*workspace
	socket string
	config string
}

func newTmuxWorld(t testing.TB, waitMaxSec int) *tmuxWorld {
	return newTmuxWorldIn(newWorkspace(t), waitMaxSec, "")
}

// newTmuxWorldIn is newTmuxWorld in workspace w, with more TOML tables
// (extra) in its config after [tmux].
func newTmuxWorldIn(w *workspace, waitMaxSec int, extra string) *tmuxWorld {
	t := w.t
	_, err := exec.LookPath("tmux")
	require.NoError(t, err, "tmux is needed (.ci/run installs it)")
	tw := &tmuxWorld{workspace: w, socket: w.path("tmux.sock")}
	tw.tmux("new-session", "-d", "-s", "main", "-x", "120", "-y", "30", "sh")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", tw.socket, "kill-server").Run() })
	tw.config = w.writeConfigWith(fmt.Sprintf("tools = [\"list_panes\", \"wait_for_text\"]\n\n[tmux]\nsocket = %q\nwait_max_sec = %d\n%s", tw.socket, waitMaxSec, extra),
		w.demoServer("demo"))
	return tw
}

func (tw *tmuxWorld) tmux(args ...string) string {
	tw.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", tw.socket}, args...)...).CombinedOutput()
	require.NoError(tw.t, err, "tmux %v: %s", args, out)
	return string(out)
}

// typeLine types a command line into the pane.
func (tw *tmuxWorld) typeLine(pane, line string) {
	tw.tmux("send-keys", "-t", pane, "-l", line)
	tw.tmux("send-keys", "-t", pane, "Enter")
}

// controlClients counts the control-mode clients attached to the server.
func (tw *tmuxWorld) controlClients() int {
	out, err := exec.Command("tmux", "-S", tw.socket, "list-clients", "-F", "#{client_control_mode}").Output()
	if err != nil {
		return 0
	}
	return strings.Count(string(out), "1")
}

type paneInfo struct {
	PaneID     string `json:"paneId"`
	Generation string `json:"generation"`
	Session    string `json:"session"`
	Command    string `json:"currentCommand"`
	Width      int    `json:"width"`
	Active     bool   `json:"active"`
	Dead       bool   `json:"dead"`
}

func listPanes(t testing.TB, c *mcpClient) []paneInfo {
	t.Helper()
	res, err := c.call(context.Background(), "list_panes", nil, "")
	require.NoError(t, err)
	require.False(t, res.IsError, resultText(res))
	var out struct {
		Panes []paneInfo `json:"panes"`
	}
	require.NoError(t, json.Unmarshal([]byte(resultText(res)), &out))
	return out.Panes
}

type textResult struct {
	Matched             bool     `json:"matched"`
	Source              string   `json:"source"`
	TerminalContent     string   `json:"terminalContent"`
	Evidence            string   `json:"evidence"`
	Continuity          string   `json:"continuity"`
	Text                string   `json:"text"`
	GenerationGuarantee string   `json:"generationGuarantee"`
	KeysSent            bool     `json:"keysSent"`
	Target              paneInfo `json:"target"`
	Error               *struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Effects   string `json:"effects"`
		Retryable bool   `json:"retryable"`
	} `json:"error"`
}

func waitText(t testing.TB, c *mcpClient, target paneInfo, text string) textResult {
	t.Helper()
	return waitTextWithProgress(t, c, target, text, "")
}

// waitTextWithProgress is waitText asking for progress under token.
func waitTextWithProgress(t testing.TB, c *mcpClient, target paneInfo, text, token string) textResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	res, err := c.call(ctx, "wait_for_text", map[string]any{
		"target": map[string]any{"paneId": target.PaneID, "generation": target.Generation}, "text": text,
	}, token)
	require.NoError(t, err)
	var r textResult
	require.NoError(t, json.Unmarshal([]byte(resultText(res)), &r))
	assert.Equal(t, r.Error != nil, res.IsError, "errors are isError results")
	return r
}

// wait_for_text runs as a durable MCP task, its result the tool's own.
func TestWaitForTextAsATask(t *testing.T) {
	tw := newTmuxWorld(t, 30)
	inst := tw.startServe(tw.config)
	pane := listPanes(t, inst.client(t))[0]
	tw.typeLine(pane.PaneID, `printf '%s%s\n' TASK ED-7`)
	eventually(t, "the line on screen", func() bool { return strings.Contains(tw.tmux("capture-pane", "-p", "-t", pane.PaneID), "TASKED-7") })
	got := runOneTask(t, "http://"+inst.http+"/mcp", tw.dir, "wait_for_text", map[string]any{
		"target": map[string]any{"paneId": pane.PaneID, "generation": pane.Generation}, "text": "TASKED-7",
	})
	assert.True(t, strings.HasPrefix(got.Task.TaskID, "wait_for_text/"), got.Task.TaskID)
	require.False(t, got.Result.IsError)
	var r textResult
	require.NoError(t, json.Unmarshal(got.Result.StructuredContent, &r))
	assert.True(t, r.Matched)
	assert.Equal(t, "baseline", r.Source)
	assert.Equal(t, "completed", got.Final.Status)
}

func TestTmuxToolsAreOptIn(t *testing.T) {
	w := newWorkspace(t)
	c := w.startServe(w.writeConfig(w.demoServer("demo"))).client(t)
	list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	require.NoError(t, err)
	for _, tl := range list.Tools {
		assert.NotContains(t, []string{"list_panes", "wait_for_text"}, tl.Name)
	}
}

func TestWaitForTextOnARealPane(t *testing.T) {
	tw := newTmuxWorld(t, 30)
	c := tw.startServe(tw.config).client(t)

	list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	require.NoError(t, err)
	var wft mcp.Tool
	for _, tl := range list.Tools {
		if tl.Name == "wait_for_text" {
			wft = tl
		}
	}
	require.Equal(t, "wait_for_text", wft.Name)
	a := wft.Annotations
	assert.Equal(t, [4]bool{true, false, false, true}, [4]bool{*a.ReadOnlyHint, *a.DestructiveHint, *a.IdempotentHint, *a.OpenWorldHint})
	assert.JSONEq(t, strings.TrimSpace(readFile("../../mcpfront/schemas/wait_for_text.input.json")), string(inputSchema(t, wft)))

	panes := listPanes(t, c)
	require.Len(t, panes, 1)
	pane := panes[0]
	assert.Regexp(t, `^%[0-9]+$`, pane.PaneID)
	assert.Equal(t, "main", pane.Session)
	assert.Equal(t, 120, pane.Width)
	assert.True(t, pane.Active)
	assert.False(t, pane.Dead)

	t.Run("text already in the baseline", func(t *testing.T) {
		tw.typeLine(pane.PaneID, `printf '%s%s\n' BASE LINE-1`)
		eventually(t, "the line on screen", func() bool { return strings.Contains(tw.tmux("capture-pane", "-p", "-t", pane.PaneID), "BASELINE-1") })
		r := waitText(t, c, pane, "BASELINE-1")
		assert.True(t, r.Matched)
		assert.Equal(t, "baseline", r.Source)
		assert.Equal(t, "data", r.TerminalContent)
		assert.Equal(t, "literal_text", r.Evidence)
		assert.Equal(t, "reset", r.Continuity)
		assert.Equal(t, "BASELINE-1", r.Text)
		assert.False(t, r.KeysSent)
		assert.Equal(t, pane.PaneID, r.Target.PaneID)
		assert.Equal(t, pane.Generation, r.Target.Generation)
		assert.Contains(t, r.GenerationGuarantee, "verified")
	})

	// later prints once the wait has read its baseline (the control
	// client attaches before the baseline is captured, so text printed
	// as soon as it attaches may land in the baseline).
	calls := 0
	later := func(t testing.TB, text string, print func()) textResult {
		calls++
		token := fmt.Sprintf("later-%d", calls)
		done := make(chan textResult, 1)
		go func() { done <- waitTextWithProgress(t, c, pane, text, token) }()
		eventually(t, "the baseline read", func() bool { return len(c.messagesOf(token)) > 0 })
		print()
		r := <-done
		eventually(t, "the control client to detach", func() bool { return tw.controlClients() == 0 })
		return r
	}
	for _, tc := range []struct {
		name, text string
		print      func()
	}{
		{"text printed later", "LATER-2", func() { tw.typeLine(pane.PaneID, `printf '%s%s\n' LATE R-2`) }},
		{"text split across two writes", "SPLIT-WRITE-3", func() {
			tw.typeLine(pane.PaneID, `printf 'SPLIT-WR'; sleep 0.3; printf 'ITE-3\n'`)
		}},
		{"colored text", "COLORED-4", func() {
			tw.typeLine(pane.PaneID, `printf '\033[1;31mCOL\033[0mORED\033[32m-4\033[0m\n'`)
		}},
		{"multibyte UTF-8", "héllo wörld ✓ 5", func() {
			tw.write("utf8.txt", "héllo wörld ✓ 5\n")
			tw.typeLine(pane.PaneID, "cat "+tw.path("utf8.txt"))
		}},
		{"a 1024-byte text", strings.Repeat("0123456789abcdef", 64), func() {
			tw.write("long.txt", strings.Repeat("0123456789abcdef", 64)+"\n")
			tw.typeLine(pane.PaneID, "cat "+tw.path("long.txt"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := later(t, tc.text, tc.print)
			require.Nil(t, r.Error)
			assert.True(t, r.Matched)
			assert.Equal(t, "output", r.Source)
			assert.Equal(t, tc.text, r.Text)
		})
	}

	t.Run("progress once the baseline is read", func(t *testing.T) {
		done := make(chan textResult, 1)
		go func() { done <- waitTextWithProgress(t, c, pane, "PROGRESS-6", "pane-progress") }()
		eventually(t, "the baseline progress notification", func() bool {
			msgs := c.messagesOf("pane-progress")
			return len(msgs) == 1 && strings.Contains(msgs[0], "baseline of pane "+pane.PaneID+" read")
		})
		tw.typeLine(pane.PaneID, `printf '%s%s\n' PROGRE SS-6`)
		r := <-done
		assert.True(t, r.Matched)
		assert.Equal(t, "output", r.Source)
		assert.Len(t, c.messagesOf("pane-progress"), 1, "one notification, when the baseline is read")
	})

	t.Run("a pane moved to another session", func(t *testing.T) {
		// Its session keeps another pane, so its control client stays
		// attached there and no longer sees the moved pane's output.
		tw.tmux("split-window", "-d", "-t", pane.PaneID, "sh")
		tw.tmux("new-session", "-d", "-s", "other", "sh")
		r := later(t, "MOVED-7", func() {
			tw.tmux("join-pane", "-d", "-s", pane.PaneID, "-t", "other")
			eventually(t, "the pane in session other", func() bool {
				return strings.TrimSpace(tw.tmux("display-message", "-p", "-t", pane.PaneID, "#{session_name}")) == "other"
			})
			tw.typeLine(pane.PaneID, `printf '%s%s\n' MOV ED-7`)
		})
		require.Nil(t, r.Error)
		assert.True(t, r.Matched, "the watch followed the pane to its new session")
		assert.Equal(t, "MOVED-7", r.Text)
	})

	t.Run("the bound is a normal result", func(t *testing.T) {
		tw2 := newTmuxWorld(t, 2)
		c2 := tw2.startServe(tw2.config).client(t)
		p := listPanes(t, c2)[0]
		start := time.Now()
		r := waitText(t, c2, p, "NEVER-PRINTED")
		require.Nil(t, r.Error)
		assert.False(t, r.Matched)
		assert.GreaterOrEqual(t, time.Since(start), 2*time.Second)
		eventually(t, "no control client left", func() bool { return tw2.controlClients() == 0 })
	})
}

func TestWaitForTextErrors(t *testing.T) {
	tw := newTmuxWorld(t, 30)
	c := tw.startServe(tw.config).client(t)
	pane := listPanes(t, c)[0]

	t.Run("invalid arguments", func(t *testing.T) {
		for args, msg := range map[string]string{
			`{"target":{"paneId":"3","generation":"g"},"text":"x"}`:                                 "target.paneId: \"3\" must match",
			`{"target":{"paneId":"%01","generation":"g"},"text":"x"}`:                               "target.paneId",
			`{"target":{"paneId":"%1"},"text":"x"}`:                                                 "target.generation: is required",
			`{"target":{"paneId":"%1","generation":"g","x":1},"text":"x"}`:                          "target.x: unknown field",
			`{"target":{"paneId":"%1","generation":"g"},"text":""}`:                                 "text: must be at least 1 byte",
			`{"target":{"paneId":"%1","generation":"g"},"text":"` + strings.Repeat("é", 513) + `"}`: "text: must be at most 1024 bytes of UTF-8 (got 1026 bytes)",
			`{"text":"x"}`: "target: is required",
		} {
			var a map[string]any
			require.NoError(t, json.Unmarshal([]byte(args), &a))
			res, err := c.call(context.Background(), "wait_for_text", a, "")
			require.NoError(t, err)
			require.True(t, res.IsError, args)
			var r textResult
			require.NoError(t, json.Unmarshal([]byte(resultText(res)), &r))
			require.NotNil(t, r.Error, args)
			assert.Equal(t, "invalid_arguments", r.Error.Code, args)
			assert.Equal(t, "none", r.Error.Effects)
			assert.False(t, r.Error.Retryable)
			assert.Contains(t, r.Error.Message, msg, args)
		}
	})

	t.Run("pane not found", func(t *testing.T) {
		r := waitText(t, c, paneInfo{PaneID: "%999", Generation: pane.Generation}, "x")
		require.NotNil(t, r.Error)
		assert.Equal(t, "pane_not_found", r.Error.Code)
		assert.Equal(t, "none", r.Error.Effects)
	})

	t.Run("stale generation", func(t *testing.T) {
		tw.tmux("set-option", "-t", "main", "remain-on-exit", "on")
		tw.tmux("respawn-pane", "-k", "-t", pane.PaneID, "sh")
		fresh := listPanes(t, c)[0]
		assert.NotEqual(t, pane.Generation, fresh.Generation, "a respawn changes the generation")
		r := waitText(t, c, pane, "x")
		require.NotNil(t, r.Error)
		assert.Equal(t, "stale_generation", r.Error.Code)
		assert.False(t, r.Error.Retryable)
		pane = fresh
	})

	t.Run("pane dies while waiting", func(t *testing.T) {
		done := make(chan textResult, 1)
		go func() { done <- waitText(t, c, pane, "NEVER") }()
		eventually(t, "the control client to attach", func() bool { return tw.controlClients() == 1 })
		tw.typeLine(pane.PaneID, "exit")
		r := <-done
		require.NotNil(t, r.Error)
		assert.Equal(t, "pane_died", r.Error.Code)
		eventually(t, "no control client left", func() bool { return tw.controlClients() == 0 })
	})

	t.Run("no tmux server", func(t *testing.T) {
		tw.tmux("kill-server")
		res, err := c.call(context.Background(), "list_panes", nil, "")
		require.NoError(t, err)
		require.True(t, res.IsError)
		assert.Contains(t, resultText(res), `"code":"tmux_unavailable"`)
		r := waitText(t, c, pane, "x")
		require.NotNil(t, r.Error)
		assert.Equal(t, "tmux_unavailable", r.Error.Code)
		assert.True(t, r.Error.Retryable)
	})
}

func TestWaitForTextCancelLeavesNoClient(t *testing.T) {
	tw := newTmuxWorld(t, 60)
	c := tw.startServe(tw.config).client(t)
	pane := listPanes(t, c)[0]
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.call(ctx, "wait_for_text", map[string]any{
			"target": map[string]any{"paneId": pane.PaneID, "generation": pane.Generation}, "text": "NEVER",
		}, "")
		done <- err
	}()
	eventually(t, "the control client to attach", func() bool { return tw.controlClients() == 1 })
	cancel()
	require.Error(t, <-done)
	eventually(t, "the control client to detach", func() bool { return tw.controlClients() == 0 })
}

// A kill -9 of durawait between the call and the text: the control client
// dies with it, and after the restart the same call finds text printed
// while durawait was down.
func TestWaitForTextSurvivesKill9(t *testing.T) {
	tw := newTmuxWorld(t, 60)
	first := tw.startServe(tw.config)
	c := first.client(t)
	pane := listPanes(t, c)[0]
	go func() {
		_, _ = c.call(context.Background(), "wait_for_text", map[string]any{
			"target": map[string]any{"paneId": pane.PaneID, "generation": pane.Generation}, "text": "AFTER-CRASH",
		}, "")
	}()
	eventually(t, "the control client to attach", func() bool { return tw.controlClients() == 1 })
	first.kill9()
	eventually(t, "the control client to die with durawait", func() bool { return tw.controlClients() == 0 })

	tw.typeLine(pane.PaneID, `printf '%s%s\n' AFTER -CRASH`)
	second := tw.startServe(tw.config)
	r := waitText(t, second.client(t), pane, "AFTER-CRASH")
	require.Nil(t, r.Error)
	assert.True(t, r.Matched)
	assert.Equal(t, "baseline", r.Source, "a fresh baseline after the restart")
	assert.Equal(t, "reset", r.Continuity)
}

func TestTmuxNotInstalled(t *testing.T) {
	tw := newTmuxWorld(t, 30)
	// A PATH without tmux: durawait cannot find it.
	c := tw.startServeEnv(tw.config, []string{"PATH=" + tw.path("empty-bin")}).client(t)
	res, err := c.call(context.Background(), "list_panes", nil, "")
	require.NoError(t, err)
	require.True(t, res.IsError)
	assert.Contains(t, resultText(res), `"code":"tmux_unavailable"`)
	assert.Contains(t, resultText(res), "tmux is not installed")

	r := waitText(t, c, paneInfo{PaneID: "%0", Generation: "g1:x"}, "x")
	require.NotNil(t, r.Error)
	assert.Equal(t, "tmux_unavailable", r.Error.Code)
	assert.Equal(t, "none", r.Error.Effects)
	assert.Contains(t, r.Error.Message, "tmux is not installed")
}
