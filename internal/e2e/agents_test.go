package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/internal/agentproc"
	"github.com/durawait/durawait/workflows"
)

// agentWorkspace is a workspace whose config has the fake agent CLI as four
// providers, one per output format, and a short wait window.
type agentWorkspace struct {
	*workspace
	config string
}

func newAgentWorkspace(t testing.TB, windowSec int) *agentWorkspace {
	w := newWorkspace(t)
	return &agentWorkspace{workspace: w, config: w.writeConfigWith(agentsTOML(w, windowSec), w.demoServer("demo"))}
}

// agentsTOML makes the workspace's scripts and work folders and returns the
// [agents] tables: the fake agent CLI as four providers, one per output
// format, with a wait window of windowSec. Each run of the CLI is logged
// in the workspace's argv.log, and how it ended in ends.log.
func agentsTOML(w *workspace, windowSec int) string {
	t := w.t
	require.NoError(t, os.MkdirAll(w.path("scripts"), 0o755))
	require.NoError(t, os.MkdirAll(w.path("work/repo"), 0o755))
	var b strings.Builder
	fmt.Fprintf(&b, "[agents]\nwait_window_sec = %d\ncancel_grace_sec = 1\nallowed_roots = [%q]\n", windowSec, w.path("work"))
	for name, format := range map[string]string{
		"fake": "claude-stream-json", "fakecodex": "codex-json", "fakegemini": "gemini-stream-json", "faketext": "text",
	} {
		cmd, _ := json.Marshal([]string{bin.fakeagent, "--scripts", w.path("scripts"), "--argv-log", w.path("argv.log"), "--end-log", w.path("ends.log"), "{prompt}"})
		fmt.Fprintf(&b, "\n[agents.providers.%s]\nformat = %q\ncommand = %s\nresume = [\"--resume\", \"{session_id}\"]\nmodel = [\"--model\", \"{model}\"]\n", name, format, cmd)
	}
	return b.String()
}

// script writes the fake CLI's script name.
func (w *agentWorkspace) script(name string, lines ...string) {
	w.t.Helper()
	require.NoError(w.t, os.WriteFile(w.path("scripts/"+name+".script"), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
}

// release lets a script waiting on "@wait name" go on.
func (w *agentWorkspace) release(name string) {
	w.t.Helper()
	require.NoError(w.t, os.WriteFile(w.path("scripts/"+name), nil, 0o644))
}

// payload is the invocation payload as a client sees it.
type payload struct {
	InvocationID string  `json:"invocation_id"`
	Status       string  `json:"status"`
	Reason       string  `json:"reason"`
	ElapsedMs    int64   `json:"elapsed_ms"`
	Output       *string `json:"output"`
	OutputAgeMs  *int64  `json:"output_age_ms"`
	Activity     *struct {
		Kind     string `json:"kind"`
		State    string `json:"state"`
		ToolName string `json:"tool_name"`
		AgeMs    int64  `json:"age_ms"`
	} `json:"activity"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	SessionID string `json:"session_id"`
}

func (p payload) output() string {
	if p.Output == nil {
		return ""
	}
	return *p.Output
}

func (c *mcpClient) agentCall(t testing.TB, tool string, args map[string]any) payload {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	res, err := c.call(ctx, tool, args, "")
	require.NoError(t, err)
	require.False(t, res.IsError, "%s failed: %s", tool, resultText(res))
	var p payload
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &p))
	return p
}

func (c *mcpClient) startAgent(t testing.TB, provider, prompt string, extra map[string]any) string {
	t.Helper()
	args := map[string]any{"provider": provider, "prompt": prompt}
	for k, v := range extra {
		args[k] = v
	}
	p := c.agentCall(t, "start_agent", args)
	require.Equal(t, "running", p.Status)
	require.Equal(t, "started", p.Reason)
	require.True(t, strings.HasPrefix(p.InvocationID, "agent/"))
	return p.InvocationID
}

func (c *mcpClient) waitAgent(t testing.TB, id string) payload {
	t.Helper()
	return c.agentCall(t, "wait_agent", map[string]any{"invocation_id": id})
}

// waitUntilFinished calls wait_agent until the invocation finishes.
func (c *mcpClient) waitUntilFinished(t testing.TB, id string) payload {
	t.Helper()
	for i := 0; i < 50; i++ {
		if p := c.waitAgent(t, id); p.Reason == "finished" {
			return p
		}
	}
	t.Fatal("the invocation did not finish")
	return payload{}
}

func TestAgentRunsToSuccess(t *testing.T) {
	w := newAgentWorkspace(t, 60)
	w.script("hello",
		`{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"Working on it."},{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}`,
		`@wait go-hello`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"exit 1"}]}}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"All tests pass now.","session_id":"{session}"}`)
	c := w.startServe(w.config).client(t)
	id := c.startAgent(t, "fake", "hello", map[string]any{"model": "opus", "cwd": w.path("work/repo")})

	// Finishing wakes the wait early, though the window is a minute; the
	// wait reports each change of the CLI's state as progress.
	start := time.Now()
	go func() {
		eventually(t, "the CLI to start", func() bool { return strings.Contains(readFile(w.path("argv.log")), "hello") })
		eventually(t, "progress: the CLI runs a tool", func() bool {
			return strings.Contains(strings.Join(c.messagesOf("agent-progress"), "\n"), "activity: tool_call Bash (running)")
		})
		w.release("go-hello")
	}()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	res, err := c.call(ctx, "wait_agent", map[string]any{"invocation_id": id}, "agent-progress")
	cancel()
	require.NoError(t, err)
	require.False(t, res.IsError, resultText(res))
	p := c.waitUntilFinished(t, id)
	assert.Less(t, time.Since(start), 50*time.Second)
	assert.Equal(t, "succeeded", p.Status)
	assert.Equal(t, "All tests pass now.", p.output(), "the final reply")
	assert.Equal(t, "sess-new", p.SessionID)
	assert.Nil(t, p.Error, "a failed tool call is no error of the run")
	assert.Contains(t, readFile(w.path("argv.log")), "--model opus hello", "the model goes before the prompt")

	// Waiting again on a finished invocation returns its result at once.
	again := c.waitAgent(t, id)
	assert.Equal(t, p.Status, again.Status)
	assert.Equal(t, "finished", again.Reason)

	list := c.listAgents(t)
	require.NotEmpty(t, list)
	assert.Equal(t, id, list[0].InvocationID)
	assert.Equal(t, "succeeded", list[0].Status)
	assert.Equal(t, "fake", list[0].Provider)
	assert.Equal(t, w.path("work/repo"), list[0].Cwd)
}

// wait_agent runs as a durable MCP task: its task is the wait update on
// the invocation, and its result the payload.
func TestWaitAgentAsATask(t *testing.T) {
	w := newAgentWorkspace(t, 60)
	w.script("quick",
		`{"type":"system","subtype":"init","session_id":"{session}"}`,
		`@wait go-quick`,
		`{"type":"result","subtype":"success","is_error":false,"result":"Done.","session_id":"{session}"}`)
	inst := w.startServe(w.config)
	c := inst.client(t)
	id := c.startAgent(t, "fake", "quick", map[string]any{"cwd": w.path("work/repo")})
	go func() {
		eventually(t, "the task", func() bool { return readFile(w.path("task-created")) != "" })
		w.release("go-quick")
	}()
	got := runOneTask(t, "http://"+inst.http+"/mcp", w.dir, "wait_agent", map[string]any{"invocation_id": id})
	assert.True(t, strings.HasPrefix(got.Task.TaskID, id+"#task-"), "the task names the invocation: %s", got.Task.TaskID)
	assert.Equal(t, "working", got.Task.Status)
	require.False(t, got.Result.IsError)
	var p payload
	require.NoError(t, json.Unmarshal(got.Result.StructuredContent, &p))
	assert.Equal(t, "succeeded", p.Status)
	assert.Equal(t, "Done.", p.output())
	assert.Equal(t, "completed", got.Final.Status)
}

// A wait_agent task on an invocation that cancel_agent ends completes with
// the cancelled payload (the invocation's workflow closes Canceled in
// Temporal, with the payload in its details): not as a failed task.
func TestAWaitAgentTaskEndsWithTheCancelledPayload(t *testing.T) {
	w := newAgentWorkspace(t, 60)
	w.script("long",
		`{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"working on it"}]}}`,
		`@wait never`)
	inst := w.startServe(w.config)
	c := inst.client(t)
	id := c.startAgent(t, "fake", "long", map[string]any{"cwd": w.path("work/repo")})
	go func() {
		eventually(t, "the task", func() bool { return readFile(w.path("task-created")) != "" })
		c.agentCall(t, "cancel_agent", map[string]any{"invocation_id": id})
	}()
	got := runOneTask(t, "http://"+inst.http+"/mcp", w.dir, "wait_agent", map[string]any{"invocation_id": id})
	require.False(t, got.Result.IsError, "a cancelled invocation is an answer, not a failure")
	var p payload
	require.NoError(t, json.Unmarshal(got.Result.StructuredContent, &p))
	assert.Equal(t, "cancelled", p.Status)
	assert.Equal(t, "finished", p.Reason)
	assert.Equal(t, "working on it", p.output())
	assert.Equal(t, "completed", got.Final.Status)
}

type listed struct {
	InvocationID string `json:"invocation_id"`
	Status       string `json:"status"`
	Provider     string `json:"provider"`
	Cwd          string `json:"cwd"`
	Prompt       string `json:"prompt"`
}

func (c *mcpClient) listAgents(t testing.TB) []listed {
	t.Helper()
	res, err := c.call(context.Background(), "list_agents", nil, "")
	require.NoError(t, err)
	require.False(t, res.IsError, resultText(res))
	var out struct {
		Invocations []listed `json:"invocations"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Invocations
}

func TestBlockersWakeOncePerCategoryAndTheWindowExpires(t *testing.T) {
	w := newAgentWorkspace(t, 2)
	w.script("blocky",
		`{"type":"system","subtype":"init","session_id":"{session}"}`,
		`@bigtext 3000`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"Claude requested permissions to use Write, but you haven't granted it yet."}]}}`,
		`@wait step2`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","is_error":true,"content":"Claude requested permissions to use Edit, but you haven't granted it yet."}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t3","name":"Read","input":{}}]}}`,
		`@wait step3`,
		`{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"{session}"}`)
	c := w.startServe(w.config).client(t)
	id := c.startAgent(t, "fake", "blocky", nil)

	// The permission blocker wakes the wait; the CLI keeps running.
	var p payload
	for i := 0; i < 20 && p.Reason != "execution_blocked"; i++ {
		p = c.waitAgent(t, id)
	}
	require.Equal(t, "execution_blocked", p.Reason)
	assert.Equal(t, "running", p.Status)
	require.NotNil(t, p.Error)
	assert.Equal(t, "permission_denied", p.Error.Code)
	assert.Contains(t, p.Error.Message, "Write")

	// The same category again does not wake it: the window runs out.
	w.release("step2")
	eventually(t, "the second denial to be read", func() bool {
		q := c.waitAgent(t, id)
		require.NotEqual(t, "execution_blocked", q.Reason, "a category wakes only once")
		return q.Activity != nil && q.Activity.ToolName == "Read"
	})
	q := c.waitAgent(t, id)
	assert.Equal(t, "wait_elapsed", q.Reason)
	assert.Equal(t, "running", q.Status)
	assert.GreaterOrEqual(t, q.ElapsedMs, int64(2000))
	// Running payloads carry the reply's last 1000 characters and its age.
	require.NotNil(t, q.Output)
	assert.Len(t, q.output(), 1000)
	assert.True(t, strings.HasSuffix(q.output(), "xxxEND"))
	require.NotNil(t, q.OutputAgeMs)
	assert.GreaterOrEqual(t, *q.OutputAgeMs, int64(1000))
	require.NotNil(t, q.Activity)
	assert.Equal(t, "tool_call", q.Activity.Kind)
	assert.Equal(t, "running", q.Activity.State)
	assert.Equal(t, "sess-new", q.SessionID)

	w.release("step3")
	final := c.waitUntilFinished(t, id)
	assert.Equal(t, "succeeded", final.Status)
	assert.Equal(t, "done", final.output())
}

// A wait_agent whose caller hangs up takes no blocker with it: the next
// call reports the blocker the run hit after the hang-up, and the call
// after that does not report it again.
func TestAWaitAgentCallerWhoHangsUpLeavesTheBlockerForTheNextCall(t *testing.T) {
	// A window far longer than the test: a wait left behind would hold
	// the blocker for all of it.
	w := newAgentWorkspace(t, 60)
	w.script("asks",
		`{"type":"system","subtype":"init","session_id":"{session}"}`,
		`@wait step1`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"Claude requested permissions to use Write, but you haven't granted it yet."}]}}`,
		`@wait step2`,
		`{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"{session}"}`)
	inst := w.startServe(w.config)
	c := inst.client(t)
	id := c.startAgent(t, "fake", "asks", nil)

	ctx, hangUp := context.WithCancel(context.Background())
	defer hangUp()
	go func() { _, _ = c.call(ctx, "wait_agent", map[string]any{"invocation_id": id}, "") }()
	eventually(t, "the first call's wait to be attached", func() bool {
		return regexp.MustCompile(`msg="wait attached".* tool=wait_agent`).MatchString(inst.log.String())
	})
	hangUp()
	eventually(t, "durawait to see the hang-up", func() bool {
		return regexp.MustCompile(`msg="wait call ended".* tool=wait_agent`).MatchString(inst.log.String())
	})
	// The hang-up released the wait: it ended long before its window.
	tc := temporalClient(t, w.owner().Engine)
	var accepted, completed time.Time
	eventually(t, "the first call's wait to end", func() bool {
		accepted, completed = time.Time{}, time.Time{}
		iter := tc.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				return false
			}
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
				accepted = ev.GetEventTime().AsTime()
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
				completed = ev.GetEventTime().AsTime()
			}
		}
		return !completed.IsZero()
	})
	assert.Less(t, completed.Sub(accepted), 30*time.Second, "released at the hang-up, not left to its 60 s window")

	w.release("step1")
	p := c.waitAgent(t, id)
	require.Equal(t, "execution_blocked", p.Reason, "the blocker is the next call's: %+v", p)
	require.NotNil(t, p.Error)
	assert.Equal(t, "permission_denied", p.Error.Code)

	// Acked: the next wait does not report it again, and answers the
	// run's end.
	w.release("step2")
	final := c.waitAgent(t, id)
	assert.Equal(t, "finished", final.Reason, "the blocker was reported once: %+v", final)
	assert.Equal(t, "succeeded", final.Status)
}

func TestAgentExitingOnABlockerEndsBlocked(t *testing.T) {
	w := newAgentWorkspace(t, 30)
	w.script("noauth",
		`{"type":"thread.started","thread_id":"th-1"}`,
		`{"type":"turn.started"}`,
		`{"type":"turn.failed","error":{"message":"401 Unauthorized: invalid api key"}}`,
		`@exit 1`)
	c := w.startServe(w.config).client(t)
	id := c.startAgent(t, "fakecodex", "noauth", nil)
	p := c.waitAgent(t, id)
	if p.Reason == "execution_blocked" {
		p = c.waitUntilFinished(t, id)
	}
	assert.Equal(t, "finished", p.Reason)
	assert.Equal(t, "blocked", p.Status)
	require.NotNil(t, p.Error)
	assert.Equal(t, "auth_failed", p.Error.Code)
	assert.Equal(t, "th-1", p.SessionID)
}

func TestAgentFailuresAndOtherFormats(t *testing.T) {
	w := newAgentWorkspace(t, 30)
	w.script("crash", "partial output", "@stderr panic: boom", "@exit 3")
	w.script("gemauth", "@stderr Please set an Auth method in your settings.json", "@exit 41")
	w.script("textok", "line one", "garbage {not json", "all good")
	w.script("huge", `{"type":"system","subtype":"init","session_id":"{session}"}`, "@bigtext 3000000")
	w.script("gem",
		`{"type":"init","session_id":"g-1"}`,
		`{"type":"message","role":"assistant","content":"Fixed ","delta":true}`,
		`{"type":"message","role":"assistant","content":"it.","delta":true}`,
		`{"type":"result","status":"success"}`)
	c := w.startServe(w.config).client(t)

	crash := c.waitUntilFinished(t, c.startAgent(t, "faketext", "crash", nil))
	assert.Equal(t, "failed", crash.Status)
	require.NotNil(t, crash.Error)
	assert.Equal(t, "exit_status", crash.Error.Code)
	assert.Equal(t, "the CLI exited with status 3; stderr: panic: boom", crash.Error.Message, "the end of stderr says why")
	assert.Equal(t, "partial output", crash.output())

	ok := c.waitUntilFinished(t, c.startAgent(t, "faketext", "textok", nil))
	assert.Equal(t, "succeeded", ok.Status)
	assert.Equal(t, "line one\ngarbage {not json\nall good", ok.output())

	huge := c.waitUntilFinished(t, c.startAgent(t, "fake", "huge", nil))
	assert.Equal(t, "succeeded", huge.Status)
	assert.True(t, strings.HasPrefix(huge.output(), fmt.Sprintf("[%d bytes cut]\n", 3000003-256*1024)), "a 3 MB reply keeps its last 256 KiB")
	assert.True(t, strings.HasSuffix(huge.output(), "xxxEND"))

	gemAuth := c.waitUntilFinished(t, c.startAgent(t, "fakegemini", "gemauth", nil))
	assert.Equal(t, "blocked", gemAuth.Status)
	require.NotNil(t, gemAuth.Error)
	assert.Equal(t, "auth_failed", gemAuth.Error.Code, "Gemini's exit 41")
	assert.Contains(t, gemAuth.Error.Message, "stderr: Please set an Auth method")

	gem := c.waitUntilFinished(t, c.startAgent(t, "fakegemini", "gem", nil))
	assert.Equal(t, "succeeded", gem.Status)
	assert.Equal(t, "Fixed it.", gem.output())
	assert.Equal(t, "g-1", gem.SessionID)
}

func TestResumeAndArgumentRules(t *testing.T) {
	w := newAgentWorkspace(t, 30)
	w.script("again", `{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"resumed","session_id":"{session}"}`)
	c := w.startServe(w.config).client(t)

	p := c.waitUntilFinished(t, c.startAgent(t, "fake", "again", map[string]any{"session_id": "sess-earlier"}))
	assert.Equal(t, "sess-earlier", p.SessionID)
	assert.Contains(t, readFile(w.path("argv.log")), "--resume sess-earlier again")

	for args, msg := range map[string]string{
		`{"provider":"claude","prompt":"x"}`:                                  `provider: "claude" is not a configured provider (configured: fake, fakecodex, fakegemini, faketext)`,
		`{"provider":"fake","prompt":"x","cwd":"/etc"}`:                       `cwd: "/etc" is outside the allowed roots`,
		`{"provider":"fake","prompt":"x","cwd":"` + w.path("work/../") + `"}`: "is outside the allowed roots",
	} {
		var a map[string]any
		require.NoError(t, json.Unmarshal([]byte(args), &a))
		res, err := c.call(context.Background(), "start_agent", a, "")
		require.NoError(t, err)
		require.True(t, res.IsError, args)
		assert.Contains(t, resultText(res), msg)
	}
	res, err := c.call(context.Background(), "wait_agent", map[string]any{"invocation_id": "agent/doesnotexist"}, "")
	require.NoError(t, err)
	require.True(t, res.IsError)
	assert.Contains(t, resultText(res), `"agent/doesnotexist" is not an invocation ID returned by start_agent`)
}

func TestCancelStopsTheWholeProcessGroup(t *testing.T) {
	w := newAgentWorkspace(t, 30)
	w.script("stubborn", `{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"halfway"}]}}`,
		"@child", "@ignore-term", "@wait never")
	c := w.startServe(w.config).client(t)
	id := c.startAgent(t, "fake", "stubborn", nil)
	eventually(t, "the child process", func() bool { return readFile(w.path("scripts/stubborn.child.pid")) != "" })
	child, err := strconv.Atoi(readFile(w.path("scripts/stubborn.child.pid")))
	require.NoError(t, err)

	p := c.agentCall(t, "cancel_agent", map[string]any{"invocation_id": id})
	assert.Equal(t, "cancelled", p.Status)
	assert.Equal(t, "finished", p.Reason)
	assert.Equal(t, "halfway", p.output())
	eventually(t, "the child to be gone", func() bool { return syscall.Kill(child, 0) != nil || isZombie(child) })

	again := c.agentCall(t, "cancel_agent", map[string]any{"invocation_id": id})
	assert.Equal(t, "cancelled", again.Status, "cancelling again is harmless")
}

func isZombie(pid int) bool {
	stat := readFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := strings.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// The CLI keeps running while durawait is killed; after the restart the
// invocation re-attaches and ends with the CLI's full output.
func TestAgentSurvivesKill9(t *testing.T) {
	w := newAgentWorkspace(t, 30)
	w.script("long", `{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"before the crash"}]}}`,
		"@wait resume-long",
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","is_error":true,"content":"Claude requested permissions to use Edit, but you haven't granted it yet."}]}}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"finished after the crash","session_id":"{session}"}`)
	first := w.startServe(w.config)
	c := first.client(t)
	id := c.startAgent(t, "fake", "long", nil)
	eventually(t, "the CLI's first reply", func() bool {
		return strings.Contains(readFile(w.path("data/agents/"+strings.ReplaceAll(id, "/", "_")+"/stdout")), "before the crash")
	})
	first.kill9()

	// The CLI outlives durawait and finishes while it is down.
	w.release("resume-long")
	c2 := w.startServe(w.config).client(t)
	var p payload
	for i := 0; i < 20; i++ {
		p = c2.waitAgent(t, id)
		if p.Reason == "finished" {
			break
		}
		if p.Reason == "execution_blocked" {
			assert.Equal(t, "permission_denied", p.Error.Code, "blockers written while durawait was down still wake")
		}
	}
	assert.Equal(t, "finished", p.Reason)
	assert.Equal(t, "succeeded", p.Status)
	assert.Equal(t, "finished after the crash", p.output())
	assert.Equal(t, "sess-new", p.SessionID)
	assert.Equal(t, 1, strings.Count(readFile(w.path("argv.log")), "long"), "the CLI ran once: re-attached, not restarted")
}

func TestAgentToolsAreListedWithTheirAnnotations(t *testing.T) {
	w := newAgentWorkspace(t, 30)
	c := w.startServe(w.config).client(t)
	list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	require.NoError(t, err)
	tools := map[string]mcp.Tool{}
	for _, tl := range list.Tools {
		tools[tl.Name] = tl
	}
	for name, want := range map[string][4]bool{ // readOnly, destructive, idempotent, openWorld
		"start_agent":  {false, true, false, true},
		"wait_agent":   {true, false, true, false},
		"cancel_agent": {false, true, true, false},
		"list_agents":  {true, false, true, false},
	} {
		tl, ok := tools[name]
		require.True(t, ok, name)
		a := tl.Annotations
		require.NotNil(t, a.ReadOnlyHint, name)
		assert.Equal(t, want, [4]bool{*a.ReadOnlyHint, *a.DestructiveHint, *a.IdempotentHint, *a.OpenWorldHint}, name)
		assert.Contains(t, string(outputSchema(t, tl)), `"type"`, name)
	}
	assert.Contains(t, tools["wait_agent"].Description, "Waits for a fixed window of 30s")
	assert.Contains(t, string(outputSchema(t, tools["wait_agent"])), `"execution_blocked"`)
}

// killRun kills an invocation's supervisor and CLI, as a machine loss would.
func killRun(t testing.TB, w *agentWorkspace, id string) {
	t.Helper()
	dir := w.path("data/agents/" + strings.ReplaceAll(id, "/", "_"))
	eventually(t, "the CLI's process group", func() bool { return readFile(dir+"/cli.pgid") != "" })
	pgid := recordedPid(t, dir+"/cli.pgid")
	sup := recordedPid(t, dir+"/supervisor.pid")
	require.NoError(t, syscall.Kill(sup, syscall.SIGKILL))
	require.NoError(t, syscall.Kill(-pgid, syscall.SIGKILL))
	eventually(t, "the supervisor to be gone", func() bool { return syscall.Kill(sup, 0) != nil || isZombie(sup) })
}

// recordedPid reads the pid of a spool folder's process record ("<pid>
// <start time>").
func recordedPid(t testing.TB, path string) int {
	t.Helper()
	fields := strings.Fields(readFile(path))
	require.NotEmpty(t, fields, path)
	pid, err := strconv.Atoi(fields[0])
	require.NoError(t, err, path)
	return pid
}

// When the CLI is lost with its machine, a run whose provider session is
// known resumes it; one without ends failed with worker_lost. Never stuck.
func TestLostRunsResumeOrFailWithWorkerLost(t *testing.T) {
	w := newAgentWorkspace(t, 2)
	w.script("session", `{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"started"}]}}`, "@wait never")
	// The resumed run gets durawait's resume prompt, whose first word names this script.
	w.script("durawait", `{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"picked up where it left off","session_id":"{session}"}`)
	w.script("nosession", "working without a session", "@wait never")

	first := w.startServe(w.config)
	c := first.client(t)
	withSession := c.startAgent(t, "fake", "session", nil)
	without := c.startAgent(t, "faketext", "nosession", nil)
	eventually(t, "both runs to report", func() bool {
		return strings.Contains(readFile(w.path("data/agents/"+strings.ReplaceAll(withSession, "/", "_")+"/stdout")), "started") &&
			strings.Contains(readFile(w.path("data/agents/"+strings.ReplaceAll(without, "/", "_")+"/stdout")), "working")
	})
	// Let a heartbeat carry the session ID, then lose everything.
	eventually(t, "the session in a heartbeat", func() bool {
		return c.waitAgent(t, withSession).SessionID == "sess-new"
	})
	first.kill9()
	killRun(t, w, withSession)
	killRun(t, w, without)

	c2 := w.startServe(w.config).client(t)
	resumed := c2.waitUntilFinished(t, withSession)
	assert.Equal(t, "succeeded", resumed.Status)
	assert.Equal(t, "picked up where it left off", resumed.output())
	assert.Contains(t, readFile(w.path("argv.log")), "--resume sess-new durawait restarted this run")

	lost := c2.waitUntilFinished(t, without)
	assert.Equal(t, "failed", lost.Status)
	require.NotNil(t, lost.Error)
	assert.Equal(t, "worker_lost", lost.Error.Code)
}

// A start_agent call with a request_id is safe to repeat: the identical
// call returns the same invocation, while it runs and after it finished,
// and the CLI runs once; a call that differs (another request_id, or the
// same request_id with another prompt) is another invocation.
func TestStartAgentWithARequestIDIsSafeToRepeat(t *testing.T) {
	w := newAgentWorkspace(t, 30)
	for _, name := range []string{"once", "other"} {
		w.script(name, `{"type":"system","subtype":"init","session_id":"{session}"}`,
			`@wait go-`+name,
			`{"type":"result","subtype":"success","is_error":false,"result":"done `+name+`","session_id":"{session}"}`)
	}
	c := w.startServe(w.config).client(t)
	key := map[string]any{"request_id": "7d0f6a52-retry-me"}

	first := c.startAgent(t, "fake", "once", key)
	eventually(t, "the CLI to start", func() bool { return strings.Contains(readFile(w.path("argv.log")), "once") })
	assert.Equal(t, first, c.startAgent(t, "fake", "once", key), "the same invocation while it runs")
	w.release("go-once")
	p := c.waitUntilFinished(t, first)
	assert.Equal(t, "done once", p.output())
	assert.Equal(t, first, c.startAgent(t, "fake", "once", key), "and after it finished")
	assert.Equal(t, "finished", c.waitAgent(t, first).Reason, "wait_agent then gives its final payload")
	assert.Equal(t, 1, strings.Count(readFile(w.path("argv.log")), "once"), "the CLI ran once")

	other := c.startAgent(t, "fake", "other", key)
	assert.NotEqual(t, first, other, "the same request_id with another prompt is another invocation")
	assert.NotEqual(t, other, c.startAgent(t, "fake", "other", map[string]any{"request_id": "another"}))
	w.release("go-other")

	res, err := c.call(context.Background(), "start_agent", map[string]any{"provider": "fake", "prompt": "x", "request_id": ""}, "")
	require.NoError(t, err)
	require.True(t, res.IsError)
	assert.Contains(t, resultText(res), "request_id: must not be empty")
}

// A claim no host took within AgentClaimTimeout asks Temporal whether
// agent hosts poll their queue (AgentHostsPolling) before it gives up on
// them. The real engine reports a running agent host there, and nobody on
// a queue no host polls.
func TestTheEngineReportsTheAgentHostsThatPollTheClaimQueue(t *testing.T) {
	w := newAgentWorkspace(t, 30)
	w.startServe(w.config)
	hosts := &activities.AgentHosts{Queues: temporalClient(t, w.owner().Engine)}
	polling := func(queue string) int {
		n, err := hosts.Polling(context.Background(), workflows.AgentHostsPollingInput{Queue: queue, Within: workflows.AgentClaimTimeout})
		require.NoError(t, err)
		return n
	}
	eventually(t, "the agent host to show as polling its claim queue", func() bool {
		return polling(workflows.AgentClaimQueue("durawait")) == 1
	})
	assert.Zero(t, polling(workflows.AgentClaimQueue("nobody")))
}

// Another OS user on the machine cannot reach an agent run's spool: not
// its output, nor the spool folder whose lock (agentproc.LockSpool)
// orders the resumption of a lost run, so no other user can read a run
// or stall its resumption by holding that lock. The data dir sits here in
// a folder every user may enter, so the refusal is durawait's own (its
// data dir is private), not the test's temp dir's.
func TestAnotherOSUserCannotReachTheAgentSpool(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("acting as another OS user (nobody) needs root")
	}
	w := &agentWorkspace{workspace: newWorkspace(t)}
	shared, err := os.MkdirTemp("", "durawait-shared-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(shared) })
	require.NoError(t, os.Chmod(shared, 0o755))
	data := filepath.Join(shared, "data")
	c := w.startServe(w.writeConfigAt("serve.toml", data, agentsTOML(w.workspace, 60))).client(t)
	w.script("hold", `{"type":"system","subtype":"init","session_id":"{session}"}`, `@wait go`,
		`{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"{session}"}`)
	id := c.startAgent(t, "fake", "hold", map[string]any{"cwd": w.path("work/repo")})
	t.Cleanup(func() { w.release("go") })
	eventually(t, "the CLI running", func() bool { return strings.Contains(readFile(w.path("argv.log")), "hold") })
	runs, err := filepath.Glob(filepath.Join(data, "agents", "*", agentproc.StdoutFile))
	require.NoError(t, err)
	require.Len(t, runs, 1, "the run's spooled output")

	// opens opens path for reading as the user nobody (what a flock needs).
	opens := func(path string) error {
		cmd := exec.Command("sh", "-c", `exec 9<"$1"`, "sh", path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}
	require.NoError(t, opens(shared), "nobody can open the shared folder (else the refusals below prove nothing)")
	for _, path := range []string{filepath.Join(data, "agents"), runs[0]} {
		err := opens(path)
		require.Error(t, err, "nobody opened %s", path)
		assert.Contains(t, err.Error(), "ermission denied", path)
	}
	w.release("go")
	assert.Equal(t, "succeeded", c.waitUntilFinished(t, id).Status)
}

// A CLI that writes past agents.max_output_mb leaves a spool that holds
// its head and its newest output, the cut recorded beside it and freed on
// disk, and its invocation answers the final reply as if nothing were cut.
func TestAnAgentsOutputIsCappedOnDisk(t *testing.T) {
	w := &agentWorkspace{workspace: newWorkspace(t)}
	agents := strings.Replace(agentsTOML(w.workspace, 60), "[agents]\n", "[agents]\nmax_output_mb = 1\n", 1)
	w.config = w.writeConfigWith(agents, w.demoServer("demo"))
	lines := []string{`{"type":"system","subtype":"init","session_id":"{session}"}`}
	for range 40 {
		lines = append(lines, "@bigtext 100000") // 4 MB in all
	}
	lines = append(lines, `{"type":"assistant","message":{"content":[{"type":"text","text":"Nearly there."}]}}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"Done after a lot of output.","session_id":"{session}"}`)
	w.script("chatty", lines...)
	c := w.startServe(w.config).client(t)
	id := c.startAgent(t, "fake", "chatty", map[string]any{"cwd": w.path("work/repo")})

	p := c.waitUntilFinished(t, id)
	assert.Equal(t, "succeeded", p.Status)
	assert.Equal(t, "Done after a lot of output.", p.output())
	assert.Equal(t, "sess-new", p.SessionID)

	stdout := w.path("data/agents/" + strings.ReplaceAll(id, "/", "_") + "/" + agentproc.StdoutFile)
	cut, ok := agentproc.ReadCut(stdout)
	require.True(t, ok, "the output passed its cap of 1 MiB: the cut is recorded in %s%s", stdout, agentproc.CutSuffix)
	assert.Greater(t, cut.Bytes(), int64(2<<20), "most of the 4 MB was cut")
	fi, err := os.Stat(stdout)
	require.NoError(t, err)
	assert.Less(t, fi.Sys().(*syscall.Stat_t).Blocks*512, int64(2<<20), "the cut bytes are freed on disk")
	lines2 := agentproc.ReadLines(stdout)
	require.NotEmpty(t, lines2)
	assert.Contains(t, string(lines2[0]), `"session_id":"sess-new"`, "the head is kept")
	assert.Contains(t, string(lines2[len(lines2)-1]), "Done after a lot of output.", "the newest output is kept")
}

// A provider whose command is a bare name is found through agents.path,
// whatever PATH durawait itself has.
func TestAgentsPathFindsABareCommand(t *testing.T) {
	w := &agentWorkspace{workspace: newWorkspace(t)}
	require.NoError(t, os.MkdirAll(w.path("scripts"), 0o755))
	require.NoError(t, os.MkdirAll(w.path("work/repo"), 0o755))
	dir := filepath.Dir(bin.fakeagent)
	agents := fmt.Sprintf("[agents]\nwait_window_sec = 60\nallowed_roots = [%q]\npath = [%q, \"/usr/bin\", \"/bin\"]\n\n[agents.providers.bare]\nformat = \"claude-stream-json\"\ncommand = [%q, \"--scripts\", %q, \"{prompt}\"]\n",
		w.path("work"), dir, filepath.Base(bin.fakeagent), w.path("scripts"))
	w.config = w.writeConfigWith(agents)
	w.script("hi", `{"type":"system","subtype":"init","session_id":"{session}"}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"found on agents.path","session_id":"{session}"}`)
	c := w.startServe(w.config).client(t)
	id := c.startAgent(t, "bare", "hi", map[string]any{"cwd": w.path("work/repo")})
	p := c.waitUntilFinished(t, id)
	assert.Equal(t, "succeeded", p.Status, "%+v", p)
	assert.Equal(t, "found on agents.path", p.output())
}

// A CLI whose retries of its API (here Codex's reconnects, with no
// network) keep coming for agents.unreachable_after_sec is an execution blocker,
// network_unavailable, once; the CLI is left running, and finishes when
// the network comes back.
func TestACLIThatCannotReachItsAPIIsBlocked(t *testing.T) {
	w := &agentWorkspace{workspace: newWorkspace(t)}
	agents := strings.Replace(agentsTOML(w.workspace, 60), "[agents]\n", "[agents]\nunreachable_after_sec = 2\n", 1)
	w.config = w.writeConfigWith(agents, w.demoServer("demo"))
	w.script("offline",
		`{"type":"thread.started","thread_id":"th-1"}`,
		`{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion: error sending request)"}`,
		`@sleep 1100ms`,
		`{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion: error sending request)"}`,
		`@sleep 1100ms`,
		`{"type":"error","message":"Reconnecting... 3/5 (stream disconnected before completion: error sending request)"}`,
		`@wait network-back`,
		`{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"back online"}}`,
		`{"type":"turn.completed"}`)
	c := w.startServe(w.config).client(t)
	id := c.startAgent(t, "fakecodex", "offline", nil)

	var p payload
	for i := 0; i < 20 && p.Reason != "execution_blocked"; i++ {
		p = c.waitAgent(t, id)
	}
	require.Equal(t, "execution_blocked", p.Reason)
	assert.Equal(t, "running", p.Status, "the CLI is left running")
	require.NotNil(t, p.Error)
	assert.Equal(t, "network_unavailable", p.Error.Code)
	assert.Contains(t, p.Error.Message, "Reconnecting... 3/5", "the retries kept coming for 2 s")

	w.release("network-back")
	final := c.waitUntilFinished(t, id)
	assert.Equal(t, "succeeded", final.Status)
	assert.Equal(t, "back online", final.output())
}
