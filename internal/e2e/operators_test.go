package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/workflows"
)

// toolEvent is one event of GET /events (docs/operations.md).
type toolEvent struct {
	Seq        uint64  `json:"seq"`
	Type       string  `json:"type"`
	Tool       string  `json:"tool"`
	CallID     string  `json:"call_id"`
	WaitID     string  `json:"wait_id"`
	WaitStart  string  `json:"wait_start"`
	Target     string  `json:"target"`
	Principal  string  `json:"principal"`
	Session    string  `json:"session"`
	Client     string  `json:"client"`
	Progress   float64 `json:"progress"`
	Message    string  `json:"message"`
	Outcome    string  `json:"outcome"`
	Result     string  `json:"result"`
	ResultCut  int     `json:"result_cut_chars"`
	DurationMS int64   `json:"duration_ms"`
	// event is the frame's SSE event name.
	event string
}

// eventStream is a subscription to GET /events.
type eventStream struct {
	t      testing.TB
	events chan toolEvent
}

// getEvents GETs /events (path with its query) with token ("" sends none),
// returning the status and, on 200, the body.
func (i *instance) getEvents(t testing.TB, path, token string) (*http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+i.http+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return http.DefaultClient.Do(req)
}

// subscribe opens /events as token and returns once the subscription is in
// place (the stream's first comment has arrived).
func (i *instance) subscribe(t testing.TB, path, token string) *eventStream {
	t.Helper()
	resp, err := i.getEvents(t, path, token)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	r := bufio.NewReader(resp.Body)
	first, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, ": subscribed\n", first)
	s := &eventStream{t: t, events: make(chan toolEvent, 256)}
	go func() {
		defer resp.Body.Close()
		fields := map[string]string{}
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				close(s.events)
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "" && len(fields) > 0:
				var ev toolEvent
				if json.Unmarshal([]byte(fields["data"]), &ev) == nil {
					ev.event = fields["event"]
					s.events <- ev
				}
				fields = map[string]string{}
			case line == "" || strings.HasPrefix(line, ":"):
			default:
				k, v, _ := strings.Cut(line, ": ")
				fields[k] = v
			}
		}
	}()
	return s
}

// next is the stream's next event.
func (s *eventStream) next() toolEvent {
	s.t.Helper()
	select {
	case ev, ok := <-s.events:
		require.True(s.t, ok, "the event stream ended")
		require.Equal(s.t, ev.Type, ev.event, "the SSE event name is the event's type")
		return ev
	case <-time.After(testTimeout):
		s.t.Fatal("timed out waiting for a tool-call event")
	}
	return toolEvent{}
}

// A streaming client follows alice's wait_for call on /events: started,
// its samples, ended with the result, all with one call ID and the wait's
// ID; bob's stream shows none of it, and ?tool= filters.
func TestOpsEventsFollowACallPerPrincipal(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.withTokens(w.writeConfig(w.demoServer("demo"))))

	// Refusals first: the same authentication as /mcp, and a bad filter
	// names its parameter.
	resp, err := inst.getEvents(t, "/events", "")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, err = inst.getEvents(t, "/events?tool=wait_for,nope", aliceToken)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(body), `query parameter tool: unknown tool "nope"`)

	all := inst.subscribe(t, "/events", aliceToken)
	onlyWaitFor := inst.subscribe(t, "/events?tool=wait_for", aliceToken)
	onlyReadFile := inst.subscribe(t, "/events?tool=read_file", aliceToken)
	bobs := inst.subscribe(t, "/events", bobToken)

	alice, alice2, bob := inst.clientAs(t, aliceToken), inst.clientAs(t, aliceToken), inst.clientAs(t, bobToken)
	w.write("status", "starting")
	args := readFileWait(w.path("status"), nil)
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 2)
	call := func(c *mcpClient) {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		res, err := c.call(ctx, "wait_for", args, "")
		done <- outcome{res, err}
	}
	go call(alice)

	started := all.next()
	assert.Equal(t, "durawait.tool_call.started", started.Type)
	assert.Equal(t, "wait_for", started.Tool)
	assert.Equal(t, "alice", started.Principal)
	assert.Equal(t, "started", started.WaitStart, "the first call started the wait")
	require.True(t, strings.HasPrefix(started.WaitID, "wait_for/"), started.WaitID)
	require.NotEmpty(t, started.CallID)
	pathArg, err := json.Marshal(map[string]string{"path": w.path("status")})
	require.NoError(t, err)
	assert.Equal(t, workflows.WaitForTarget(workflows.WaitForSpec{
		Probe: workflows.Probe{Tool: "demo.read_file", Args: pathArg},
		Until: workflows.Until{Kind: workflows.ConditionMatches, Pattern: "READY"},
	}, false), started.Target, "the event says what the wait waits for")

	// A second identical call of alice's attaches to the same wait.
	sample := all.next()
	assert.Equal(t, "durawait.tool_call.progress", sample.Type)
	assert.Equal(t, float64(1), sample.Progress)
	assert.Equal(t, "sample 1: starting", sample.Message)
	go call(alice2)
	var attached toolEvent
	for attached.Type != "durawait.tool_call.started" {
		attached = all.next()
	}
	assert.Equal(t, "attached", attached.WaitStart)
	assert.Equal(t, started.WaitID, attached.WaitID, "the same wait")
	assert.NotEqual(t, started.CallID, attached.CallID, "a fresh call ID per tools/call")

	w.write("status", "all READY")
	results := []outcome{<-done, <-done}
	for _, o := range results {
		require.NoError(t, o.err)
		require.False(t, o.res.IsError, resultText(o.res))
	}

	// The first call's events, in order, through its end.
	var first []toolEvent
	for _, ev := range collectUntilEnded(t, onlyWaitFor, started.CallID) {
		first = append(first, ev)
	}
	require.GreaterOrEqual(t, len(first), 3, "started, samples, ended")
	assert.Equal(t, "durawait.tool_call.started", first[0].Type)
	ended := first[len(first)-1]
	assert.Equal(t, "durawait.tool_call.ended", ended.Type)
	for i, ev := range first {
		assert.Equal(t, started.WaitID, ev.WaitID)
		assert.Equal(t, "wait_for", ev.Tool, "?tool=wait_for lets only wait_for through")
		if i > 0 && i < len(first)-1 {
			assert.Equal(t, "durawait.tool_call.progress", ev.Type)
			assert.Equal(t, float64(i), ev.Progress, "samples in order")
		}
	}
	assert.Equal(t, "matched", ended.Outcome)
	assert.Equal(t, 0, ended.ResultCut, "a short result is whole")
	var result mcp.CallToolResult
	require.NoError(t, json.Unmarshal([]byte(ended.Result), &result), ended.Result)
	assert.Equal(t, resultText(results[0].res), resultText(&result), "the event carries the call's result")

	// bob calls a re-exposed tool: that is the first thing his stream
	// shows, so none of alice's events (published before) reached him.
	w.write("greeting", "hi")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, err = bob.call(ctx, "read_file", map[string]any{"path": w.path("greeting")}, "")
	require.NoError(t, err)
	ev := bobs.next()
	assert.Equal(t, "bob", ev.Principal)
	assert.Equal(t, "read_file", ev.Tool)
	assert.Equal(t, "durawait.tool_call.started", ev.Type)
	assert.Empty(t, ev.WaitID, "a re-exposed call has no wait")

	// alice's read_file stream saw none of her wait_for events.
	_, err = alice.call(ctx, "read_file", map[string]any{"path": w.path("greeting")}, "")
	require.NoError(t, err)
	ev = onlyReadFile.next()
	assert.Equal(t, "read_file", ev.Tool)
	assert.Equal(t, "alice", ev.Principal)

	// The log has one "wait started" and one "wait attached" line for it
	// (it reaches the test through a pipe, maybe after the answers).
	eventually(t, "both end lines in the log", func() bool {
		return countLines(inst.log.String(), `msg="wait call ended"`, started.WaitID) == 2
	})
	log := inst.log.String()
	assert.Equal(t, 1, countLines(log, `msg="wait started"`, started.WaitID), log)
	assert.Equal(t, 1, countLines(log, `msg="wait attached"`, started.WaitID))
	assert.Equal(t, 2, countLines(log, `msg="wait call ended"`, started.WaitID, "outcome=matched", "caller.principal=alice"))
	// The worker logs the wait's own end, once for the two calls.
	eventually(t, "the wait's end in the log", func() bool {
		return countLines(inst.log.String(), `msg="wait ended"`, started.WaitID) > 0
	})
	log = inst.log.String()
	assert.Equal(t, 1, countLines(log, `msg="wait ended"`, started.WaitID, "tool=wait_for", "outcome=matched", "caller.principal=alice", "duration_ms="), log)
}

// collectUntilEnded reads s until callID's ended event, returning that
// call's events.
func collectUntilEnded(t *testing.T, s *eventStream, callID string) []toolEvent {
	t.Helper()
	var out []toolEvent
	for {
		ev := s.next()
		if ev.CallID != callID {
			continue
		}
		out = append(out, ev)
		if ev.Type == "durawait.tool_call.ended" {
			return out
		}
	}
}

// countLines counts the lines of log that contain every needle.
func countLines(log string, needles ...string) int {
	n := 0
	for _, line := range strings.Split(log, "\n") {
		all := true
		for _, needle := range needles {
			all = all && strings.Contains(line, needle)
		}
		if all {
			n++
		}
	}
	return n
}

// /readyz checks the engine and the workers; the log is JSON with
// --log-format json (config log_format).
func TestOpsReadyzAndJSONLogs(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfigWith(`log_format = "json"`, w.demoServer("demo")))
	var report struct {
		Status string `json:"status"`
		Checks map[string]struct {
			OK     bool   `json:"ok"`
			Detail string `json:"detail"`
		} `json:"checks"`
	}
	// The worker's first poll may come a moment after /healthz.
	eventually(t, "/readyz 200", func() bool {
		resp, err := http.Get("http://" + inst.http + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		report.Checks = nil
		_ = json.NewDecoder(resp.Body).Decode(&report)
		return resp.StatusCode == http.StatusOK
	})
	assert.Equal(t, "ready", report.Status)
	assert.True(t, report.Checks["temporal"].OK)
	assert.True(t, report.Checks["workers"].OK)
	assert.Contains(t, report.Checks["workers"].Detail, `poll task queue "durawait"`)

	c := inst.client(t)
	w.write("job", "READY")
	res := c.waitFor(t, readFileWait(w.path("job"), nil))
	assert.Equal(t, "matched", res.Reason)
	// The log reaches the test through a pipe, maybe after the answer.
	eventually(t, "the end lines in the log", func() bool {
		log := inst.log.String()
		return strings.Contains(log, `"msg":"wait call ended"`) && strings.Contains(log, `"msg":"wait ended"`)
	})
	var sawStart, sawEnd, sawWorkerEnd bool
	// caller is one nested object on the front's lines and the worker's
	// alike.
	callerOf := func(m map[string]any) map[string]any {
		t.Helper()
		c, ok := m["caller"].(map[string]any)
		require.True(t, ok, "caller is a JSON object: %v", m)
		assert.NotContains(t, m, "caller.principal", "no flat caller keys")
		return c
	}
	// Complete lines only: the last may still be on its way.
	log := inst.log.String()
	for _, line := range strings.Split(log[:strings.LastIndexByte(log, '\n')], "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "every log line is JSON: %q", line)
		switch m["msg"] {
		case "wait started":
			sawStart = true
			assert.Equal(t, "wait_for", m["tool"])
			assert.Equal(t, "anonymous", callerOf(m)["principal"])
		case "wait call ended":
			sawEnd = true
			assert.Equal(t, "matched", m["outcome"])
			assert.Equal(t, "anonymous", callerOf(m)["principal"])
		case "wait ended":
			sawWorkerEnd = true
			assert.Equal(t, "matched", m["outcome"])
			assert.Equal(t, "wait_for", m["tool"])
			assert.Equal(t, "anonymous", callerOf(m)["principal"])
		}
	}
	assert.True(t, sawStart)
	assert.True(t, sawEnd)
	assert.True(t, sawWorkerEnd)
}

// listedWait is a row of `durawait waits list --json`.
type listedWait struct {
	ID, Tool, State, Summary, Target string
}

// waitsListed runs `durawait waits list --json` with args until it lists n
// waits, and returns them.
func (w *workspace) waitsListed(n int, args ...string) []listedWait {
	w.t.Helper()
	var rows []listedWait
	eventually(w.t, "waits list to list "+strconv.Itoa(n)+" waits", func() bool {
		out, errOut, ok := w.waits(append(append([]string{"list"}, args...), "--json")...)
		require.True(w.t, ok, errOut)
		rows = nil
		require.NoError(w.t, json.Unmarshal([]byte(out), &rows), out)
		return len(rows) == n
	})
	return rows
}

// waits runs `durawait waits` with args; it returns stdout, stderr and
// whether it succeeded.
func (w *workspace) waits(args ...string) (string, string, bool) {
	w.t.Helper()
	cmd := exec.Command(bin.durawait, append([]string{"waits"}, args...)...)
	cmd.Env = os.Environ()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err == nil
}

// An operator lists, shows and cancels a running wait_for with `durawait
// waits` against a running serve, found through its data dir.
func TestOpsWaitsListShowCancel(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	inst := w.startServe(config)
	c := inst.client(t)
	w.write("job", "running")
	args := readFileWait(w.path("job"), nil)
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		res, err := c.call(ctx, "wait_for", args, "")
		done <- outcome{res, err}
	}()
	eventually(t, "two samples", func() bool { return w.calls("job") >= 2 })

	// list --running --tool wait_for finds it (JSON and table).
	rows := w.waitsListed(1, "--config", config, "--running", "--tool", "wait_for")
	id := rows[0].ID
	assert.True(t, strings.HasPrefix(id, "wait_for/"), id)
	assert.Equal(t, "wait_for", rows[0].Tool)
	assert.Equal(t, "running", rows[0].State)
	assert.Contains(t, rows[0].Summary, `/job until matches "READY"`)
	assert.True(t, strings.HasPrefix(rows[0].Target, "demo.read_file path="), "what it waits for: %s", rows[0].Target)
	assert.True(t, strings.HasSuffix(rows[0].Target, "/job matches READY"), rows[0].Target)
	table, errOut, ok := w.waits("list", "--data-dir", w.path("data"), "--running")
	require.True(t, ok, errOut)
	assert.Equal(t, []string{"ID", "RUN", "TOOL", "STATE", "CALLER", "STARTED", "DURATION", "TARGET"}, strings.Fields(strings.SplitN(table, "\n", 2)[0]))
	assert.Contains(t, table, "demo.read_file path=", "the table's TARGET column")
	assert.Contains(t, table, "/job matches READY", "a long target is cut in its middle: its condition stays")
	assert.Contains(t, table, id)
	assert.Contains(t, table, "running ", "how long it has run")
	// --state and --since narrow the list.
	running, errOut, ok := w.waits("list", "--config", config, "--state", "running", "--since", "1h", "--json")
	require.True(t, ok, errOut)
	assert.Contains(t, running, id)
	timedOut, errOut, ok := w.waits("list", "--config", config, "--state", "timeout", "--json")
	require.True(t, ok, errOut)
	assert.NotContains(t, timedOut, id)
	future, errOut, ok := w.waits("list", "--config", config, "--since", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "--json")
	require.True(t, ok, errOut)
	assert.Equal(t, "[]", strings.TrimSpace(future), "nothing started in the future")
	// --caller: without authentication the caller is anonymous.
	mine, errOut, ok := w.waits("list", "--config", config, "--running", "--caller", "anonymous", "--json")
	require.True(t, ok, errOut)
	assert.Contains(t, mine, id)
	others, errOut, ok := w.waits("list", "--config", config, "--caller", "nobody", "--json")
	require.True(t, ok, errOut)
	assert.Equal(t, "[]", strings.TrimSpace(others))
	// The same through --temporal, as against a cluster (with the
	// engine's certificate, as `durawait temporal-env` names it).
	engine := w.owner().Engine
	table, errOut, ok = w.waits(append([]string{"list", "--temporal", engine, "--namespace", "default", "--running"}, engineFlags(engine)...)...)
	require.True(t, ok, errOut)
	assert.Contains(t, table, id)

	// show: the call, its state changes, the last observation.
	var detail struct {
		Arguments       map[string]any `json:"arguments"`
		Changes         []struct{ What, Identity string }
		LastObservation map[string]any `json:"last_observation"`
		State           string         `json:"state"`
		Failure         string         `json:"failure"`
	}
	eventually(t, "a last observation in show", func() bool {
		out, errOut, ok := w.waits("show", id, "--config", config, "--json")
		require.True(t, ok, errOut)
		require.NoError(t, json.Unmarshal([]byte(out), &detail), out)
		return detail.LastObservation["last_observation"] == "running"
	})
	spec, _ := detail.Arguments["spec"].(map[string]any)
	require.NotNil(t, spec, "the call's arguments: %v", detail.Arguments)
	assert.Contains(t, mustJSON(t, spec), w.path("job"))
	require.NotEmpty(t, detail.Changes)
	assert.True(t, strings.HasPrefix(detail.Changes[0].What, "started"), detail.Changes[0].What)
	shown, errOut, ok := w.waits("show", "--config", config, id)
	require.True(t, ok, errOut)
	for _, want := range []string{"wait:     " + id, "arguments:", "state changes:", "last observation:", "result: none yet"} {
		assert.Contains(t, shown, want)
	}

	// cancel ends it; the MCP caller gets an answer.
	out, errOut, ok := w.waits("cancel", id, "--config", config, "--reason", "rolling out v2")
	require.True(t, ok, errOut)
	assert.Contains(t, out, "cancel requested for wait "+id+" (as durawait-waits:")
	got := <-done
	require.NoError(t, got.err)
	assert.Contains(t, strings.ToLower(resultText(got.res)), "cancel", "the caller learns its wait was cancelled: %s", resultText(got.res))
	// The cancel reached the probe loop on its host (StopLoop): it stopped.
	eventually(t, "the probe loop to stop", func() bool {
		return countLines(inst.log.String(), "stopping a loop, as its wait asked", id) == 1
	})

	eventually(t, "the cancel in show", func() bool {
		out, errOut, ok := w.waits("show", id, "--config", config, "--json")
		require.True(t, ok, errOut)
		require.NoError(t, json.Unmarshal([]byte(out), &detail), out)
		return detail.Failure != ""
	})
	assert.True(t, strings.HasPrefix(detail.State, "cancel"), detail.State)
	var by string
	for _, ch := range detail.Changes {
		if ch.What == "cancel requested: rolling out v2" {
			by = ch.Identity
		}
	}
	assert.True(t, strings.HasPrefix(by, "durawait-waits:"), "the history names the operator: %q", by)
	out, _, ok = w.waits("list", "--config", config, "--running", "--tool", "wait_for", "--json")
	require.True(t, ok)
	assert.JSONEq(t, "[]", out, "no longer running")
	eventually(t, "the cancelled wait's end in the log", func() bool {
		return countLines(inst.log.String(), `msg="wait ended"`, id, "outcome=cancelled", "caller.principal=anonymous") == 1
	})

	// Bad arguments name the flag or the rule.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "--config", config, "--limit", "0"}, "--limit: must be at least 1"},
		{[]string{"show", "--config", config}, "the wait's ID is required"},
		{[]string{"cancel", "--config", config, "wait_for/nope"}, "no wait with this ID: wait_for/nope"},
		{[]string{"cancel", "--config", config, id}, "is not running"},
		{[]string{"cancel", "--config", config, id, "--json"}, "flag provided but not defined: -json"},
		{[]string{"list", "--config", config, "--state", "finished"}, `--state: "finished" is not a wait's state`},
		{[]string{"list", "--data-dir", w.path("elsewhere")}, "no durawait runs on data dir"},
		{[]string{"frob"}, `unknown subcommand "frob"`},
	} {
		_, errOut, ok := w.waits(tc.args...)
		assert.False(t, ok, "%v", tc.args)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// readyz GETs /readyz of an instance: its status and the failed checks.
func (i *instance) readyz(t testing.TB) (int, []string) {
	t.Helper()
	resp, err := http.Get("http://" + i.http + "/readyz")
	require.NoError(t, err)
	defer resp.Body.Close()
	var rep struct {
		Failed []string `json:"failed"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&rep))
	return resp.StatusCode, rep.Failed
}

// A front end alone is ready only while some worker polls its task queue:
// on a queue no worker polls, /readyz answers 503 naming the workers check
// while /healthz (liveness) answers 200.
func TestOpsReadyzOfAFrontNamesMissingWorkers(t *testing.T) {
	w := newWorkspace(t)
	w.startServe(w.writeConfig(w.demoServer("demo")))
	engine := w.owner().Engine
	require.NotEmpty(t, engine)

	// (Each front reads the config file when it starts; the next write
	// does not change it.)
	lonely := w.startFront(w.writeConfigWith(`task_queue = "nobody-polls-this"`), engine)
	status, failed := lonely.readyz(t)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Equal(t, []string{"workers"}, failed, "Temporal answers; no worker polls the queue")

	// On the serve's queue, the serve's worker makes the front ready.
	front := w.startFront(w.writeConfigWith(""), engine)
	eventually(t, "the front's /readyz 200", func() bool {
		status, _ := front.readyz(t)
		return status == http.StatusOK
	})
}
