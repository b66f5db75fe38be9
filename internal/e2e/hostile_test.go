package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// hostile is one bad input: a tools/call with arguments no rule allows, or
// a raw JSON-RPC message. Each must be refused with an error whose text
// holds every word of want (the field's name and the rule's words), and the
// server must stay healthy after it.
type hostile struct {
	name string
	// tool and args make a tools/call; args is sent as it is (any JSON
	// value; a json.RawMessage verbatim).
	tool string
	args any
	// raw, instead, is a whole JSON-RPC message sent as it is.
	raw string
	// rpc says the refusal is a JSON-RPC error (malformed protocol), not an
	// isError tool result.
	rpc bool
	// header, over HTTP, is set on the raw message's request (an empty
	// value removes the header).
	header map[string]string
	// only limits the row to one transport ("http" or "stdio").
	only string
	want []string
}

// hostileHealthEvery is how many rows run between two health checks.
const hostileHealthEvery = 20

// TestHostileInputs sends every row of hostileRows over streamable HTTP and
// over stdio (one durawait of each, reused for every row), expecting a named
// error each time and a working wait_for and /healthz every
// hostileHealthEvery rows and at the end.
func TestHostileInputs(t *testing.T) {
	hw := newHostileWorld(t)
	rows := hostileRows(hw)
	require.GreaterOrEqual(t, len(rows), 150)
	transports := []struct {
		name string
		c    *mcpClient
		raw  rawSender
		url  string
		w    *hostileWorkspace
	}{
		{"http", hw.httpClient, hw.httpRaw, "http://" + hw.http.http, hw.httpWS},
		{"stdio", hw.stdioClient, hw.stdioRaw, strings.TrimSuffix(hw.stdioWS.owner().HTTP, "/mcp"), hw.stdioWS},
	}
	run := map[string]int{}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			n := 0
			for _, row := range rows {
				if row.only != "" && row.only != tr.name {
					continue
				}
				t.Run(row.name, func(t *testing.T) {
					run[tr.name]++
					text, isRPC := sendHostile(t, tr.c, tr.raw, row)
					t.Logf("refused: %.300s", text)
					for _, word := range row.want {
						require.Contains(t, strings.ToLower(text), strings.ToLower(word), "the refusal names %q", word)
					}
					if row.raw == "" {
						require.Equal(t, row.rpc, isRPC, "refused as a JSON-RPC error (true) or an isError result (false): %s", text)
					}
				})
				if n++; n%hostileHealthEvery == 0 {
					tr.w.requireHealthy(t, tr.c, tr.url)
				}
			}
			tr.w.requireHealthy(t, tr.c, tr.url)
		})
	}
	summary := fmt.Sprintf("hostile inputs: %d rows; run %d over http, %d over stdio", len(rows), run["http"], run["stdio"])
	t.Log(summary)
	fmt.Println(summary)
}

// sendHostile sends row and returns the refusal's text and whether it was
// a JSON-RPC error. A tool call that succeeds fails the test.
func sendHostile(t *testing.T, c *mcpClient, raw rawSender, row hostile) (string, bool) {
	t.Helper()
	if row.raw != "" {
		return raw(t, row.raw, row.header), true
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = row.tool
	req.Params.Arguments = row.args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return err.Error(), true
	}
	if res.IsError {
		return resultText(res), false
	}
	// Some refusals come later: an agent whose cwd escapes through a link
	// starts, and its invocation fails at once.
	if row.tool == "start_agent" {
		var p payload
		b, _ := json.Marshal(res.StructuredContent)
		require.NoError(t, json.Unmarshal(b, &p))
		fin := c.waitUntilFinished(t, p.InvocationID)
		require.NotNil(t, fin.Error, "the invocation of %v ran: %+v", row.args, fin)
		return fin.Error.Code + ": " + fin.Error.Message, false
	}
	t.Fatalf("%s with %v was accepted: %s", row.tool, row.args, resultText(res))
	return "", false
}

// hostileWorkspace is a workspace configured with every tool: the demo
// probe, the fake agent CLI as provider "fake", and the tmux tools on a
// private tmux server.
type hostileWorkspace struct {
	*workspace
	config string
	socket string
}

func newHostileWorkspace(t *testing.T, shared hostileShared) *hostileWorkspace {
	w := newWorkspace(t)
	hw := &hostileWorkspace{workspace: w, socket: shared.socket}
	require.NoError(t, os.MkdirAll(w.path("scripts"), 0o755))
	cmd, _ := json.Marshal([]string{bin.fakeagent, "--scripts", w.path("scripts"), "--argv-log", w.path("argv.log"), "{prompt}"})
	extra := fmt.Sprintf("tools = [\"list_panes\", \"wait_for_text\"]\n\n[tmux]\nsocket = %q\nwait_max_sec = 5\n\n"+
		"[agents]\nwait_window_sec = 5\ncancel_grace_sec = 1\nallowed_roots = [%q]\n\n"+
		"[agents.providers.fake]\nformat = \"claude-stream-json\"\ncommand = %s\n",
		shared.socket, shared.root, cmd)
	hw.config = w.writeConfigWith(extra, w.demoServer("demo"))
	w.write("status", "READY")
	return hw
}

// hostileShared is what both durawaits of the suite use: the agents'
// allowed root (with a repo folder and a link "escape" to /) and a tmux
// server with one session.
type hostileShared struct {
	root, socket string
}

func newHostileShared(t *testing.T) hostileShared {
	_, err := exec.LookPath("tmux")
	require.NoError(t, err, "tmux is needed (.ci/run installs it)")
	dir := t.TempDir()
	sh := hostileShared{root: filepath.Join(dir, "work"), socket: filepath.Join(dir, "tmux.sock")}
	require.NoError(t, os.MkdirAll(filepath.Join(sh.root, "repo"), 0o755))
	require.NoError(t, os.Symlink("/", filepath.Join(sh.root, "escape")))
	out, err := exec.Command("tmux", "-S", sh.socket, "new-session", "-d", "-s", "main", "-x", "80", "-y", "20", "sh").CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", sh.socket, "kill-server").Run() })
	return sh
}

// requireHealthy checks that /healthz answers 200 and a normal wait_for
// still works.
func (w *hostileWorkspace) requireHealthy(t *testing.T, c *mcpClient, base string) {
	t.Helper()
	resp, err := http.Get(base + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "/healthz")
	res := c.waitFor(t, readFileWait(w.path("status"), map[string]any{"max_wait_sec": 10}))
	require.Equal(t, "matched", res.Reason)
}

// hostileWorld is the two durawaits of the suite and what rows refer to.
type hostileWorld struct {
	httpWS, stdioWS         *hostileWorkspace
	http                    *instance
	httpClient, stdioClient *mcpClient
	httpRaw, stdioRaw       rawSender
	// pane is a live pane of the tmux server, as list_panes reports it.
	pane paneInfo
	// root is the allowed root of start_agent.
	root string
}

func newHostileWorld(t *testing.T) *hostileWorld {
	shared := newHostileShared(t)
	hw := &hostileWorld{httpWS: newHostileWorkspace(t, shared), stdioWS: newHostileWorkspace(t, shared), root: shared.root}
	hw.http = hw.httpWS.startServe(hw.httpWS.config)
	hw.httpClient = hw.http.client(t)
	hw.stdioClient, _ = hw.stdioWS.stdioClient(hw.stdioWS.config)
	hw.httpRaw = newRawHTTP(t, "http://"+hw.http.http+"/mcp")
	hw.stdioRaw = newRawStdio(t, hw.stdioWS)
	panes := listPanes(t, hw.httpClient)
	require.NotEmpty(t, panes)
	hw.pane = panes[0]
	return hw
}

// rawSender sends one raw JSON-RPC message and returns what came back.
type rawSender func(t *testing.T, msg string, header map[string]string) string

// newRawHTTP opens a session by hand and returns a sender that POSTs raw
// bodies in it; the answer is the status line and the body.
func newRawHTTP(t *testing.T, url string) rawSender {
	post := func(t *testing.T, session, body string, header map[string]string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		for k, v := range header {
			if v == "" {
				req.Header.Del(k)
			} else {
				req.Header.Set(k, v)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, fmt.Sprintf("status %d: %s", resp.StatusCode, b)
	}
	resp, text := post(t, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}}`, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, text)
	session := resp.Header.Get("Mcp-Session-Id")
	post(t, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	return func(t *testing.T, msg string, header map[string]string) string {
		_, text := post(t, session, msg, header)
		return text
	}
}

// newRawStdio starts one more `durawait serve --stdio` bridge to w's daemon
// and returns a sender that writes a line and reads the next line back.
func newRawStdio(t *testing.T, w *hostileWorkspace) rawSender {
	cmd := exec.Command(bin.durawait, "serve", "--stdio", "--config", w.config, "--engine-port", "0", "--no-ui")
	cmd.Env = append(os.Environ(), w.env()...)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(t *testing.T, msg string, _ map[string]string) string {
		_, err := io.WriteString(stdin, msg+"\n")
		require.NoError(t, err)
		select {
		case line, ok := <-lines:
			require.True(t, ok, "the stdio bridge closed its output")
			return line
		case <-time.After(testTimeout):
			t.Fatalf("no reply over stdio to %.200s", msg)
			return ""
		}
	}
	init := send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}}`, nil)
	require.Contains(t, init, `"result"`)
	_, err = io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	require.NoError(t, err)
	return send
}

// nested returns depth levels of JSON arrays around inner.
func nested(depth int, inner string) json.RawMessage {
	return json.RawMessage(strings.Repeat("[", depth) + inner + strings.Repeat("]", depth))
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// callMsg is a raw tools/call message with the given arguments text.
func callMsg(tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, args)
}
