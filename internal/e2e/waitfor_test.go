package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestToolsAreListedAndForwarded(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)
	ctx := context.Background()

	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	require.NoError(t, err)
	tools := map[string]mcp.Tool{}
	for _, tool := range list.Tools {
		tools[tool.Name] = tool
	}
	for _, name := range []string{"wait_for", "read_file", "structured_file", "clock", "counter", "big", "fail", "hang"} {
		assert.Contains(t, tools, name)
	}

	waitFor := tools["wait_for"]
	ann := waitFor.Annotations
	require.NotNil(t, ann.ReadOnlyHint)
	require.NotNil(t, ann.DestructiveHint)
	require.NotNil(t, ann.IdempotentHint)
	require.NotNil(t, ann.OpenWorldHint)
	assert.True(t, *ann.ReadOnlyHint)
	assert.False(t, *ann.DestructiveHint)
	assert.True(t, *ann.IdempotentHint)
	assert.True(t, *ann.OpenWorldHint)
	var input map[string]any
	require.NoError(t, json.Unmarshal(inputSchema(t, waitFor), &input))
	assert.Equal(t, false, input["additionalProperties"])
	assert.Equal(t, []any{"probe", "until"}, input["required"])
	output := outputSchema(t, waitFor)
	assert.Contains(t, string(output), `"effective_max_wait_sec"`, "wait_for declares an output schema")

	// The re-exposed tool has the downstream definition: same schema, same annotations.
	readFile := tools["read_file"]
	assert.Equal(t, "Read a text file; empty while it does not exist.", readFile.Description)
	require.NotNil(t, readFile.Annotations.OpenWorldHint)
	assert.False(t, *readFile.Annotations.OpenWorldHint, "annotations are the downstream tool's")
	assert.JSONEq(t, `{"type":"object","properties":{"path":{"type":"string","description":"file to read"}},"required":["path"]}`,
		string(inputSchema(t, readFile)))

	// A call through durawait reaches the downstream server.
	w.write("greeting", "hello from the probe")
	res, err := c.call(ctx, "read_file", map[string]any{"path": w.path("greeting")}, "")
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Equal(t, "hello from the probe", resultText(res))
	assert.Equal(t, 1, w.calls("greeting"))
}

func TestWaitForMatchesAndReportsProgress(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)
	w.write("status", "starting")

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		res, err := c.call(ctx, "wait_for", readFileWait(w.path("status"), nil), "tok-1")
		done <- outcome{res, err}
	}()
	eventually(t, "three samples", func() bool { return w.calls("status") >= 3 })
	w.write("status", "all READY")
	out := <-done
	require.NoError(t, out.err)
	require.False(t, out.res.IsError, resultText(out.res))
	res := decodeWait(t, out.res)

	assert.Equal(t, "matched", res.Reason)
	assert.Equal(t, "matches", res.Condition)
	assert.Equal(t, "all READY", res.LastObservation)
	assert.Equal(t, w.calls("status"), res.Samples, "every probe call is a sample")
	assert.GreaterOrEqual(t, res.Samples, 4)
	assert.Equal(t, 60, res.EffectiveMaxWaitSec)
	assert.GreaterOrEqual(t, res.ElapsedSec, float64(res.Samples-1)*1.0-0.5)

	progress := c.progressOf("tok-1")
	// One notification per sample; the last may race the result.
	assert.GreaterOrEqual(t, len(progress), res.Samples-1)
	for i, p := range progress {
		assert.Equal(t, float64(i+1), p, "progress counts samples")
	}
}

func TestWaitForConditionsEndToEnd(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)

	t.Run("not_matches", func(t *testing.T) {
		w.write("pods", "web-1 Terminating")
		go func() {
			eventually(t, "two samples", func() bool { return w.calls("pods") >= 2 })
			w.write("pods", "web-2 Running")
		}()
		res := c.waitFor(t, readFileWait(w.path("pods"), map[string]any{"until": map[string]any{"not_matches": "Terminating"}}))
		assert.Equal(t, "matched", res.Reason)
		assert.Equal(t, "not_matches", res.Condition)
		assert.Equal(t, "web-2 Running", res.LastObservation)
	})

	t.Run("quiet_for_sec", func(t *testing.T) {
		w.write("log", "line 1")
		res := c.waitFor(t, readFileWait(w.path("log"), map[string]any{"until": map[string]any{"quiet_for_sec": 2}, "max_wait_sec": 30}))
		assert.Equal(t, "settled", res.Reason)
		assert.Equal(t, "quiet_for_sec", res.Condition)
		assert.GreaterOrEqual(t, res.Samples, 3, "samples at 0, 1 and 2 s")
		assert.GreaterOrEqual(t, res.ElapsedSec, 2.0)
	})

	t.Run("fail_matches", func(t *testing.T) {
		w.write("rollout", "Pending")
		go func() {
			eventually(t, "a sample", func() bool { return w.calls("rollout") >= 1 })
			w.write("rollout", "CrashLoopBackOff")
		}()
		res := c.waitFor(t, readFileWait(w.path("rollout"), map[string]any{"until": map[string]any{"matches": "Running", "fail_matches": "CrashLoopBackOff|Error"}}))
		assert.Equal(t, "failed", res.Reason)
		assert.Equal(t, "fail_matches", res.Condition)
		assert.Equal(t, "CrashLoopBackOff", res.LastObservation)
	})

	t.Run("timeout is a normal result", func(t *testing.T) {
		w.write("never", "Pending")
		res := c.waitFor(t, readFileWait(w.path("never"), map[string]any{"max_wait_sec": 3}))
		assert.Equal(t, "timeout", res.Reason)
		assert.Empty(t, res.Condition)
		assert.Equal(t, "Pending", res.LastObservation)
		// At 0, 1, 2 and on the bound at 3 s, the schedule says (counted
		// exactly on the fake clock: activities' pollprobe tests); a
		// stalled machine may take fewer, never more, and each one is a
		// probe call the server saw.
		assert.GreaterOrEqual(t, res.Samples, 1)
		assert.LessOrEqual(t, res.Samples, 4, "at most one sample a second and one on the bound")
		assert.Equal(t, w.calls(w.path("never")), res.Samples, "every sample is a probe call, and only those")
		assert.Equal(t, 3, res.EffectiveMaxWaitSec)
		assert.GreaterOrEqual(t, res.ElapsedSec, 3.0)
	})

	t.Run("max_wait_sec is clamped", func(t *testing.T) {
		w.write("ready", "READY")
		res := c.waitFor(t, readFileWait(w.path("ready"), map[string]any{"max_wait_sec": 3600}))
		assert.Equal(t, "matched", res.Reason)
		assert.Equal(t, 300, res.EffectiveMaxWaitSec)
		assert.Equal(t, 1, res.Samples)
	})

	t.Run("structured content without text is matched as JSON", func(t *testing.T) {
		w.write("structured", "phase=Running")
		res := c.waitFor(t, map[string]any{
			"probe": map[string]any{"tool": "structured_file", "args": map[string]any{"path": w.path("structured")}},
			"until": map[string]any{"matches": `"content":"phase=Running"`},
		})
		assert.Equal(t, "matched", res.Reason)
		assert.JSONEq(t, `{"content":"phase=Running"}`, res.LastObservation)
	})

	t.Run("server-qualified probe name", func(t *testing.T) {
		w.write("qualified", "READY")
		args := readFileWait(w.path("qualified"), nil)
		args["probe"].(map[string]any)["tool"] = "demo.read_file"
		res := c.waitFor(t, args)
		assert.Equal(t, "matched", res.Reason)
	})
}

func TestWaitForRuntimeErrors(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)

	t.Run("output over 256 KiB", func(t *testing.T) {
		res := c.waitForRaw(t, map[string]any{
			"probe": map[string]any{"tool": "big", "args": map[string]any{"kib": 300}},
			"until": map[string]any{"matches": "READY"},
		})
		require.True(t, res.IsError)
		assert.Contains(t, resultText(res), "sample 1: probe demo.big returned 307200 bytes (300.0 KiB), over the 256 KiB limit")
	})

	t.Run("probe result with isError", func(t *testing.T) {
		res := c.waitForRaw(t, map[string]any{
			"probe": map[string]any{"tool": "fail", "args": map[string]any{"message": "deployment \"web\" not found"}},
			"until": map[string]any{"matches": "READY"},
		})
		require.True(t, res.IsError)
		assert.Contains(t, resultText(res), `sample 1: probe demo.fail returned an error: "deployment \"web\" not found"`)
	})

	t.Run("probe that hangs on its first call", func(t *testing.T) {
		start := time.Now()
		res := c.waitForRaw(t, map[string]any{
			"probe":        map[string]any{"tool": "hang"},
			"until":        map[string]any{"matches": "READY"},
			"poll_sec":     1,
			"max_wait_sec": 2,
		})
		require.True(t, res.IsError)
		assert.Contains(t, resultText(res), "probe demo.hang hung: sample 1 did not return within max_wait_sec 2")
		assert.Less(t, time.Since(start), 30*time.Second, "the bound holds although the probe never answers")
	})
}

func TestWaitForRejectsBadArgumentsBeforeStarting(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)

	for _, tc := range []struct {
		name    string
		args    map[string]any
		message string
	}{
		{"invalid regex", readFileWait("/x", map[string]any{"until": map[string]any{"matches": "("}}), "until.matches: is not a valid regular expression"},
		{"native tool", map[string]any{"probe": map[string]any{"tool": "wait_for"}, "until": map[string]any{"matches": "x"}}, `probe.tool: "wait_for" is one of durawait's own tools; native tools cannot be probed`},
		{"unknown tool", map[string]any{"probe": map[string]any{"tool": "kubectl_get"}, "until": map[string]any{"matches": "x"}}, `probe.tool: no downstream MCP server exposes a tool named "kubectl_get"; configured servers: local (tools: file_read, file_stat, http_request, tcp_connect); demo (tools: big, clock, counter, delete_file, env, fail, hang, read_file, structured_file)`},
		{"unknown field", readFileWait("/x", map[string]any{"timeout": 5}), "timeout: unknown field"},
		{"poll_sec >= max_wait_sec", readFileWait("/x", map[string]any{"poll_sec": 5, "max_wait_sec": 5}), "poll_sec: poll_sec 5 must be less than max_wait_sec 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := c.waitForRaw(t, tc.args)
			require.True(t, res.IsError)
			assert.Contains(t, resultText(res), tc.message)
		})
	}
	assert.Equal(t, 0, w.calls(""), "nothing was probed")
}

func TestIdenticalCallsAttachToOneWait(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)
	w.write("job", "running")
	args := readFileWait(w.path("job"), nil)

	// A caller whose tool call times out: the wait runs on without it.
	first := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	_, err := c.call(ctx, "wait_for", args, "")
	cancel()
	require.Error(t, err, "the client gave up")
	eventually(t, "samples after the caller left", func() bool { return w.calls("job") >= 4 })

	// Two callers come back at once, one over a new connection.
	other := inst.client(t)
	var wg sync.WaitGroup
	results := make([]waitResult, 2)
	for i, cl := range []*mcpClient{c, other} {
		wg.Go(func() { results[i] = cl.waitFor(t, args) })
	}
	calls := w.calls("job")
	eventually(t, "another sample", func() bool { return w.calls("job") > calls })
	w.write("job", "READY")
	wg.Wait()

	assert.Equal(t, results[0], results[1], "both callers attached to the same wait")
	res := results[0]
	assert.Equal(t, "matched", res.Reason)
	assert.Equal(t, w.calls("job"), res.Samples, "one probe loop served all three calls; samples count from the first")
	assert.GreaterOrEqual(t, res.ElapsedSec, time.Since(first).Seconds()-1.5, "elapsed counts from the first call")

	// After the wait closed, the same call starts anew.
	again := c.waitFor(t, args)
	assert.Equal(t, 1, again.Samples)
}

func TestEventsPerWaitDoNotGrowWithSamples(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)
	w.write("a", "READY")
	w.write("b", "Pending")
	short := c.waitFor(t, readFileWait(w.path("a"), nil))
	long := c.waitFor(t, readFileWait(w.path("b"), map[string]any{"max_wait_sec": 8}))
	require.Equal(t, 1, short.Samples)
	// 9 by the schedule (0 to 8 s); fewer on a stalled machine.
	require.Greater(t, long.Samples, 2, "the long wait sampled again and again")
	require.LessOrEqual(t, long.Samples, 9)

	hist := historyLengths(t, w.owner().Engine, 2)
	require.Len(t, hist, 2)
	assert.Equal(t, hist[0], hist[1], "history events: %v", hist)
	assert.Less(t, hist[0], 20)
}

func TestSecondProcessOnTheSameDataDirRefusesToStart(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	first := w.startServe(config)

	second := &syncBuffer{}
	cmd := exec.Command(bin.durawait, serveArgs(config, freeAddr(t))...)
	cmd.Stdout, cmd.Stderr = second, second
	err := cmd.Run()
	require.Error(t, err, "the second process exits")
	owner := w.owner()
	assert.Contains(t, second.String(), "is in use by another durawait process (pid "+itoa(first.cmd.Process.Pid))
	assert.Contains(t, second.String(), "--temporal "+owner.Engine)

	// The first is unharmed.
	w.write("f", "READY")
	assert.Equal(t, "matched", first.client(t).waitFor(t, readFileWait(w.path("f"), nil)).Reason)
}

func TestDuplicateToolNamesAreServerQualified(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("alpha"), w.demoServer("beta")))
	c := inst.client(t)

	list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	require.NoError(t, err)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	assert.Contains(t, names, "alpha.read_file")
	assert.Contains(t, names, "beta.read_file")
	assert.NotContains(t, names, "read_file")

	res := c.waitForRaw(t, readFileWait(w.path("x"), nil))
	require.True(t, res.IsError)
	assert.Contains(t, resultText(res), `probe.tool: "read_file" is a tool of several downstream servers; name one of alpha.read_file, beta.read_file`)

	w.write("x", "READY")
	args := readFileWait(w.path("x"), nil)
	args["probe"].(map[string]any)["tool"] = "beta.read_file"
	assert.Equal(t, "matched", c.waitFor(t, args).Reason)
}

func TestStdioRunsManyWaitsAtOnce(t *testing.T) {
	const waits = 200
	w := newWorkspace(t)
	c, _ := w.stdioClient(w.writeConfig(w.demoServer("demo")))
	w.write("gate", "closed")

	var wg sync.WaitGroup
	results := make([]waitResult, waits)
	for i := range waits {
		wg.Go(func() {
			// Each call is its own wait (distinct args) on the same file.
			args := readFileWait(w.path("gate"), map[string]any{"until": map[string]any{"matches": "open"}})
			args["probe"].(map[string]any)["args"].(map[string]any)["caller"] = i
			results[i] = c.waitFor(t, args)
		})
	}
	// The gate opens only once every wait has taken a sample: a server that
	// ran fewer calls at once would never get here.
	eventually(t, "a sample of every wait", func() bool { return distinctCallers(w) == waits })
	w.write("gate", "open")
	wg.Wait()
	for i, r := range results {
		assert.Equal(t, "matched", r.Reason, "wait %d", i)
	}
}

// distinctCallers counts the distinct "caller" arguments in the call log.
func distinctCallers(w *workspace) int {
	seen := map[string]bool{}
	for _, line := range strings.Split(readFile(w.path("calls.log")), "\n") {
		if _, after, ok := strings.Cut(line, `"caller":`); ok {
			id, _, _ := strings.Cut(after, ",")
			seen[strings.Trim(id, "}")] = true
		}
	}
	return len(seen)
}
