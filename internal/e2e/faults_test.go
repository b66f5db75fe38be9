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
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A prompt that starts with '-' reaches the CLI as its prompt when the
// command ends its options with "--" (as the presets do), and is refused,
// never passed as an option, when a custom command does not.
func TestAPromptStartingWithADashStaysThePrompt(t *testing.T) {
	w := newWorkspace(t)
	require.NoError(t, os.MkdirAll(w.path("scripts"), 0o755))
	require.NoError(t, os.MkdirAll(w.path("work"), 0o755))
	var b strings.Builder
	fmt.Fprintf(&b, "[agents]\nwait_window_sec = 30\nallowed_roots = [%q]\n", w.path("work"))
	for name, cmd := range map[string][]string{
		"dashdash": {bin.fakeagent, "--scripts", w.path("scripts"), "--argv-log", w.path("argv.log"), "--", "{prompt}"},
		"bare":     {bin.fakeagent, "--scripts", w.path("scripts"), "--argv-log", w.path("argv.log"), "{prompt}"},
	} {
		js, _ := json.Marshal(cmd)
		fmt.Fprintf(&b, "\n[agents.providers.%s]\nformat = \"claude-stream-json\"\ncommand = %s\nmodel = [\"--model\", \"{model}\"]\n", name, js)
	}
	config := w.writeConfigWith(b.String(), w.demoServer("demo"))
	const prompt = "--dangerously-skip-permissions"
	// The fake CLI plays the script named by its prompt's first word: this
	// one only when the prompt arrives as the prompt.
	require.NoError(t, os.WriteFile(w.path("scripts/"+prompt+".script"),
		[]byte(`{"type":"result","subtype":"success","is_error":false,"result":"played as a prompt","session_id":"s"}`+"\n"), 0o644))
	c := w.startServe(config).client(t)

	p := c.waitUntilFinished(t, c.startAgent(t, "dashdash", prompt, map[string]any{"model": "m1"}))
	assert.Equal(t, "succeeded", p.Status, "error: %+v", p.Error)
	assert.Equal(t, "played as a prompt", p.output())
	assert.Contains(t, readFile(w.path("argv.log")), "--model m1 -- "+prompt)

	p = c.waitUntilFinished(t, c.startAgent(t, "bare", prompt, nil))
	assert.Equal(t, "failed", p.Status)
	require.NotNil(t, p.Error)
	assert.Equal(t, "start_failed", p.Error.Code)
	assert.Contains(t, p.Error.Message, `add "--" before "{prompt}" in agents.providers.bare.command`)
	assert.Equal(t, 1, strings.Count(readFile(w.path("argv.log")), prompt), "the bare command never ran")
}

// Invalid UTF-8 in a tool call's arguments is refused with the field named,
// over HTTP and stdio, from the bytes as sent: raw bytes that do not decode
// and unpaired surrogate escapes alike. The server serves on afterwards.
func TestInvalidUTF8ArgumentsAreRefusedAsSent(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	const (
		badByte   = "{\"jsonrpc\":\"2.0\",\"id\":41,\"method\":\"tools/call\",\"params\":{\"name\":\"wait_for\",\"arguments\":{\"probe\":{\"server\":\"demo\",\"tool\":\"read_file\",\"args\":{\"path\":\"zz\xffzz\"}},\"until\":{\"matches\":\"x\"}}}}"
		surrogate = `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"wait_for","arguments":{"probe":{"server":"demo","tool":"read_file","args":{"path":"a"}},"until":{"matches":"\ud800"}}}}`
	)
	check := func(t *testing.T, body []byte, id int, path string) {
		t.Helper()
		var resp struct {
			ID     int `json:"id"`
			Result struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(body, &resp), string(body))
		assert.Equal(t, id, resp.ID)
		assert.True(t, resp.Result.IsError, string(body))
		require.NotEmpty(t, resp.Result.Content, string(body))
		assert.Contains(t, resp.Result.Content[0].Text, "wait_for: "+path+" must be valid UTF-8")
	}

	t.Run("http", func(t *testing.T) {
		inst := w.startServe(config)
		session := initializeRaw(t, "http://"+inst.http+"/mcp")
		for _, tc := range []struct {
			body string
			id   int
			path string
		}{{badByte, 41, "arguments.probe.args.path"}, {surrogate, 42, "arguments.until.matches"}} {
			req, err := http.NewRequest(http.MethodPost, "http://"+inst.http+"/mcp", strings.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			check(t, body, tc.id, tc.path)
		}
		c := inst.client(t)
		tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
		require.NoError(t, err, "the server serves on")
		assert.NotEmpty(t, tools.Tools)
		inst.kill9()
	})

	t.Run("stdio", func(t *testing.T) {
		cmd := exec.Command(bin.durawait, "serve", "--stdio", "--no-daemon", "--config", config, "--engine-port", "0", "--no-ui")
		cmd.Env = append(os.Environ(), w.env()...)
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		logs := &syncBuffer{}
		cmd.Stderr = logs
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("durawait log:\n%s", logs.String())
			}
		})
		lines := bufio.NewScanner(stdout)
		lines.Buffer(make([]byte, 1<<20), 1<<22)
		send := func(s string) {
			_, err := io.WriteString(stdin, s+"\n")
			require.NoError(t, err)
		}
		send(badByte)
		require.True(t, lines.Scan(), "a reply")
		check(t, lines.Bytes(), 41, "arguments.probe.args.path")
		send(surrogate)
		require.True(t, lines.Scan(), "a reply")
		check(t, lines.Bytes(), 42, "arguments.until.matches")
		send(`{"jsonrpc":"2.0","id":43,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		require.True(t, lines.Scan(), "a reply")
		assert.Contains(t, lines.Text(), `"id":43`)
		assert.Contains(t, lines.Text(), `"serverInfo"`, "the server serves on")
	})
}

// Stdio downstream servers get a minimal environment plus their env, and
// only the variables inherit_env names from durawait's; the data dir and
// the database files are private even when the dir existed with 0755.
func TestSecretsStayPut(t *testing.T) {
	w := newWorkspace(t)
	require.NoError(t, os.MkdirAll(w.path("data"), 0o755))
	require.NoError(t, os.Chmod(w.path("data"), 0o755))
	config := readFile(w.writeConfigWith("")) + fmt.Sprintf(`
[[mcp_servers]]
name = "plain"
command = [%q]

[[mcp_servers]]
name = "passing"
command = [%q]
inherit_env = ["PASS_ME", "DW_PREFIX_*"]
env = { CONFIGURED = "yes" }
`, bin.demoprobe, bin.demoprobe)
	require.NoError(t, os.WriteFile(w.path("durawait.toml"), []byte(config), 0o644))
	inst := w.startServeEnv(w.path("durawait.toml"), []string{"SECRET_TOKEN=s3cr3t", "PASS_ME=1", "DW_PREFIX_A=2", "LC_TIME=C"})
	c := inst.client(t)

	envOf := func(tool string) []string {
		res, err := c.call(context.Background(), tool, map[string]any{}, "")
		require.NoError(t, err)
		require.False(t, res.IsError, resultText(res))
		return strings.Split(resultText(res), "\n")
	}
	plain := envOf("plain.env")
	assert.Contains(t, plain, "PATH="+os.Getenv("PATH"))
	assert.Contains(t, plain, "LC_TIME=C")
	minimal := []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "TMPDIR", "TZ"}
	for _, kv := range plain {
		name, _, _ := strings.Cut(kv, "=")
		assert.True(t, slices.Contains(minimal, name) || strings.HasPrefix(name, "LC_"), "%s is not in the minimal environment", kv)
	}
	passing := envOf("passing.env")
	assert.Contains(t, passing, "PASS_ME=1")
	assert.Contains(t, passing, "DW_PREFIX_A=2")
	assert.Contains(t, passing, "CONFIGURED=yes")
	assert.NotContains(t, passing, "SECRET_TOKEN=s3cr3t")

	mode := func(name string) os.FileMode {
		fi, err := os.Stat(w.path(name))
		require.NoError(t, err, name)
		return fi.Mode().Perm()
	}
	assert.Equal(t, os.FileMode(0o700), mode("data"))
	for _, f := range []string{"data/temporal.db", "data/temporal.db-wal", "data/temporal.db-shm", "data/durawait.lock"} {
		assert.Equal(t, os.FileMode(0o600), mode(f), f)
	}
}

// A write-ahead log whose header is corrupt (the schema of a young database
// lives there) is named with what to do, not "no such table".
func TestACorruptWALReadsClearly(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	w.startServe(config).kill9()
	if fi, err := os.Stat(w.path("data/temporal.db")); err == nil && fi.Size() > 64<<10 {
		t.Skip("SQLite checkpointed the WAL into temporal.db; a corrupt WAL would lose nothing here")
	}
	wal := w.path("data/temporal.db-wal")
	f, err := os.OpenFile(wal, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("GARBAGE GARBAGE GARBAGE GARBAGE!"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	out := serveFails(t, w, config, "--engine-port", "0", "--no-ui")
	db := w.path("data/temporal.db")
	assert.Contains(t, out, "the database "+db+" is damaged or incomplete")
	assert.Contains(t, out, "write-ahead log "+db+"-wal may be corrupt")
	assert.Contains(t, out, "move "+db+", "+db+"-wal and "+db+"-shm aside")
}

// initializeRaw opens a 2025-11-25 session over raw HTTP and returns its ID.
func initializeRaw(t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	session := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, session)
	return session
}
