package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// eventPost is a post as wait_for_event answers it.
type eventPost struct {
	Seq        int64           `json:"seq"`
	Payload    json.RawMessage `json:"payload"`
	PostedAt   time.Time       `json:"posted_at"`
	Source     string          `json:"source"`
	DeliveryID string          `json:"delivery_id"`
}

// eventWait is wait_for_event's answer.
type eventWait struct {
	Reason              string     `json:"reason"`
	Name                string     `json:"name"`
	Event               *eventPost `json:"event"`
	Latched             bool       `json:"latched"`
	ElapsedSec          float64    `json:"elapsed_sec"`
	EffectiveMaxWaitSec int        `json:"effective_max_wait_sec"`
}

// postAnswer is post_event's answer (and the hook endpoint's).
type postAnswer struct {
	Name        string    `json:"name"`
	Seq         int64     `json:"seq"`
	PostedAt    time.Time `json:"posted_at"`
	Duplicate   bool      `json:"duplicate"`
	Answered    int       `json:"answered"`
	Woken       int       `json:"woken"`
	RetainedSec int64     `json:"retained_sec"`
}

// structuredAs decodes a tool result's structured content into v.
func structuredAs(t testing.TB, res *mcp.CallToolResult, v any) {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, v), string(raw))
}

// tryWaitEvent calls wait_for_event; it may run on any goroutine.
func (c *mcpClient) tryWaitEvent(ctx context.Context, args map[string]any) (eventWait, error) {
	res, err := c.call(ctx, "wait_for_event", args, "")
	if err != nil {
		return eventWait{}, err
	}
	if res.IsError {
		return eventWait{}, fmt.Errorf("wait_for_event failed: %s", resultText(res))
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return eventWait{}, err
	}
	var w eventWait
	return w, json.Unmarshal(raw, &w)
}

// waitEvent calls wait_for_event and requires an answer.
func (c *mcpClient) waitEvent(t testing.TB, args map[string]any) eventWait {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	w, err := c.tryWaitEvent(ctx, args)
	require.NoError(t, err)
	return w
}

// postEvent calls post_event and requires it to succeed.
func (c *mcpClient) postEvent(t testing.TB, args map[string]any) postAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	res, err := c.call(ctx, "post_event", args, "")
	require.NoError(t, err)
	require.False(t, res.IsError, "post_event failed: %s", resultText(res))
	var a postAnswer
	structuredAs(t, res, &a)
	return a
}

// Post, then wait: the wait answers at once with the kept post. Wait, then
// post: the wait answers with the post. after_seq waits for the next; a
// delivery ID posted twice is one post; match skips what it does not
// match; a wait with no post answers timeout, a normal result.
func TestEventsEndWaitsPostedBeforeOrAfter(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig())
	c := inst.client(t)

	first := c.postEvent(t, map[string]any{"name": "build-done", "payload": map[string]any{"sha": "abc", "ok": true}})
	assert.Positive(t, first.Seq)
	assert.False(t, first.Duplicate)
	assert.Equal(t, 0, first.Answered, "nobody waited yet")
	assert.Equal(t, int64(24*3600), first.RetainedSec, "the default retention")

	latched := c.waitEvent(t, map[string]any{"name": "build-done"})
	assert.Equal(t, "posted", latched.Reason)
	require.NotNil(t, latched.Event)
	assert.True(t, latched.Latched, "posted before the wait began")
	assert.Equal(t, first.Seq, latched.Event.Seq)
	assert.JSONEq(t, `{"sha":"abc","ok":true}`, string(latched.Event.Payload))
	assert.Equal(t, "mcp", latched.Event.Source)

	// Wait, then post: a new event, whose latch the wait starts (seen on
	// the engine) before the post comes.
	tc := temporalClient(t, w.owner().Engine)
	next := make(chan eventWait, 1)
	errs := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		got, err := c.tryWaitEvent(ctx, map[string]any{"name": "deploy-done"})
		if err != nil {
			errs <- err
			return
		}
		next <- got
	}()
	eventually(t, "the wait subscribed to its event's latch", func() bool {
		_, err := tc.DescribeWorkflowExecution(context.Background(), "event/deploy-done", "")
		return err == nil
	})
	second := c.postEvent(t, map[string]any{"name": "deploy-done", "payload": "second", "delivery_id": "d-2"})
	assert.Equal(t, 1, second.Answered, "the post ended the waiting call")
	select {
	case got := <-next:
		assert.Equal(t, "posted", got.Reason)
		require.NotNil(t, got.Event)
		assert.Equal(t, second.Seq, got.Event.Seq)
		assert.False(t, got.Latched, "posted while the wait ran")
		assert.JSONEq(t, `"second"`, string(got.Event.Payload))
		assert.Equal(t, "d-2", got.Event.DeliveryID)
	case err := <-errs:
		t.Fatal(err)
	}
	// after_seq: the next post, not the one answered.
	after := c.postEvent(t, map[string]any{"name": "build-done", "payload": "next"})
	assert.Greater(t, after.Seq, first.Seq)
	nextOne := c.waitEvent(t, map[string]any{"name": "build-done", "after_seq": first.Seq})
	assert.Equal(t, after.Seq, nextOne.Event.Seq)

	again := c.postEvent(t, map[string]any{"name": "deploy-done", "payload": "second again", "delivery_id": "d-2"})
	assert.True(t, again.Duplicate, "the same delivery ID is the same post")
	assert.Equal(t, second.Seq, again.Seq)

	// match: a kept post it does not match is skipped; nothing else comes
	// within the bound.
	timeout := c.waitEvent(t, map[string]any{"name": "build-done", "match": `"sha":"def"`, "max_wait_sec": 1})
	assert.Equal(t, "timeout", timeout.Reason)
	assert.Nil(t, timeout.Event)
	assert.Equal(t, 1, timeout.EffectiveMaxWaitSec)
	matched := c.waitEvent(t, map[string]any{"name": "build-done", "match": `"sha":"abc"`, "max_wait_sec": 1})
	assert.Equal(t, "posted", matched.Reason)
	assert.Equal(t, first.Seq, matched.Event.Seq)

	// Another event's posts are not this one's.
	other := c.waitEvent(t, map[string]any{"name": "test-done", "max_wait_sec": 1})
	assert.Equal(t, "timeout", other.Reason)
}

// Bad arguments name the field and the rule, and post nothing.
func TestEventToolsRefuseBadArgumentsByField(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig())
	c := inst.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"wait_for_event", map[string]any{}, "name: is required"},
		{"wait_for_event", map[string]any{"name": "a/b"}, `name: "a/b" must match`},
		{"wait_for_event", map[string]any{"name": "x", "match": "("}, "match: is not a valid regular expression"},
		{"wait_for_event", map[string]any{"name": "x", "after_seq": -1}, "after_seq: must be a whole number of at least 0"},
		{"wait_for_event", map[string]any{"name": "x", "max_wait_sec": 0}, "max_wait_sec: must be greater than zero"},
		{"wait_for_event", map[string]any{"name": "x", "wait": 1}, "wait: unknown field"},
		{"post_event", map[string]any{"payload": 1}, "name: is required"},
		{"post_event", map[string]any{"name": "x", "delivery_id": "has space"}, "delivery_id: must be printable ASCII without spaces"},
		{"post_event", map[string]any{"name": "x", "payload": string(make([]byte, 70_000))}, "payload: must be at most 65536 bytes"},
	} {
		res, err := c.call(ctx, tc.tool, tc.args, "")
		require.NoError(t, err)
		assert.True(t, res.IsError, "%s %v", tc.tool, tc.args)
		assert.Contains(t, resultText(res), tc.want, "%s %v", tc.tool, tc.args)
	}
	// The wait tells a caller that asked for progress what it waits for.
	res, err := c.call(ctx, "wait_for_event", map[string]any{"name": "x", "max_wait_sec": 1}, "ev-progress")
	require.NoError(t, err)
	var nothing eventWait
	structuredAs(t, res, &nothing)
	assert.Equal(t, "timeout", nothing.Reason, "no refused post was kept")
	assert.Contains(t, c.messagesOf("ev-progress"), "waiting for a post of event x")
}

// A wait_for with a wake-up event samples its probe at once when the
// event is posted, instead of at its next tick: push latency, poll truth.
// A post while the probe does not yet match wakes a sample that does not
// end the wait.
func TestAWakeUpEventSamplesTheProbeAtOnce(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)
	w.write("rollout", "pending")
	done := make(chan waitResult, 1)
	go func() {
		// poll_sec 250: without the wake-ups the wait would see READY only
		// after 250 s, past this test's timeout.
		done <- c.waitFor(t, readFileWait(w.path("rollout"), map[string]any{"poll_sec": 250, "max_wait_sec": 300, "wake_on_event": "ci-pushed"}))
	}()
	eventually(t, "the first sample", func() bool { return w.calls("rollout") >= 1 })
	tc := temporalClient(t, w.owner().Engine)
	latchTookTheWait(t, tc, "event/ci-pushed")
	woke := c.postEvent(t, map[string]any{"name": "ci-pushed", "payload": "not yet"})
	assert.Equal(t, 1, woke.Woken, "the post names the wait it woke")
	eventually(t, "the post to wake a sample", func() bool { return w.calls("rollout") >= 2 })
	w.write("rollout", "READY")
	c.postEvent(t, map[string]any{"name": "ci-pushed", "payload": "now"})
	res := <-done
	assert.Equal(t, "matched", res.Reason)
	assert.Less(t, res.ElapsedSec, 250.0, "answered before the first tick")
}

// latchTookTheWait waits until the latch id exists (a wait's subscription
// started it) and has no workflow task pending (it took the subscription).
func latchTookTheWait(t testing.TB, tc client.Client, id string) {
	t.Helper()
	eventually(t, "the latch "+id+" to take the wait", func() bool {
		desc, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
		return err == nil && desc.GetPendingWorkflowTask() == nil && desc.GetWorkflowExecutionInfo().GetHistoryLength() >= 5
	})
}

// Events survive kill -9: a post kept before the crash answers a wait
// after it, and a wait begun before the crash, called again after it,
// answers a post made after the restart. Operators see the latch and the
// waits in `durawait waits`.
func TestEventsAndTheirWaitsSurviveKill9(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig()
	first := w.startServe(config)
	c := first.client(t)
	c.postEvent(t, map[string]any{"name": "approved", "payload": map[string]any{"by": "ops"}})
	pending := map[string]any{"name": "released", "max_wait_sec": 300}
	go func() { _, _ = c.tryWaitEvent(context.Background(), pending) }()
	tc := temporalClient(t, w.owner().Engine)
	eventually(t, "the wait subscribed", func() bool {
		_, err := tc.DescribeWorkflowExecution(context.Background(), "event/released", "")
		return err == nil
	})
	// The two latches and the wait.
	rows := w.waitsListed(3, "--config", config, "--running")
	tools := map[string]int{}
	for _, r := range rows {
		tools[r.Tool]++
		assert.Equal(t, "running", r.State, r.ID)
	}
	assert.Equal(t, map[string]int{"post_event": 2, "wait_for_event": 1}, tools)
	first.kill9()

	second := w.startServe(config)
	c2 := second.client(t)
	latched := c2.waitEvent(t, map[string]any{"name": "approved"})
	assert.Equal(t, "posted", latched.Reason, "the post kept before the crash")
	assert.True(t, latched.Latched)

	posted := c2.postEvent(t, map[string]any{"name": "released", "payload": "go"})
	got := c2.waitEvent(t, pending)
	assert.Equal(t, "posted", got.Reason)
	require.NotNil(t, got.Event)
	// The wait begun before the crash took the post (and the call
	// re-attached to it), or it had closed with the post before the call
	// came, which then started a new wait that the kept post answered: the
	// same post either way.
	assert.Equal(t, posted.Seq, got.Event.Seq)
}

// wait_for_event runs as a task in both protocol eras: a 2025-11-25
// params.task call and a 2026-07-28 call of the tasks extension each make
// a task of the wait, which a post completes with the post; a call whose
// post is already kept answers inline.
func TestEventWaitsAreTasksOfBothEras(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.withTokens(w.writeConfig()))
	alice := inst.clientAs(t, aliceToken)

	legacy := inst.rawAs(t, aliceToken)
	created, msg := legacy.rpc("tools/call", map[string]any{"name": "wait_for_event", "arguments": map[string]any{"name": "task-2025"}, "task": map[string]any{}})
	require.Empty(t, msg)
	var ct struct {
		Task struct {
			TaskID string `json:"taskId"`
			Status string `json:"status"`
		} `json:"task"`
	}
	require.NoError(t, json.Unmarshal(created, &ct), string(created))
	require.True(t, strings.HasPrefix(ct.Task.TaskID, "wait_for_event/"), ct.Task.TaskID)
	assert.Equal(t, "working", ct.Task.Status)
	alice.postEvent(t, map[string]any{"name": "task-2025", "payload": 2025})
	result, msg := legacy.rpc("tasks/result", map[string]any{"taskId": ct.Task.TaskID})
	require.Empty(t, msg)
	var legacyResult struct {
		StructuredContent eventWait `json:"structuredContent"`
	}
	require.NoError(t, json.Unmarshal(result, &legacyResult), string(result))
	assert.Equal(t, "posted", legacyResult.StructuredContent.Reason)
	assert.JSONEq(t, "2025", string(legacyResult.StructuredContent.Event.Payload))

	modern := inst.modern(t, aliceToken, true)
	raw, rerr := modern.call("wait_for_event", map[string]any{"name": "task-2026"})
	require.Nil(t, rerr, rerr.String())
	task := decodeExt[extTaskJSON](t, raw)
	require.Equal(t, "task", task.ResultType, string(raw))
	require.True(t, strings.HasPrefix(task.TaskID, "wait_for_event/"), task.TaskID)
	alice.postEvent(t, map[string]any{"name": "task-2026", "payload": 2026})
	var done extTaskJSON
	eventually(t, "the task completed by the post", func() bool {
		done = modern.get(task.TaskID)
		return done.Status == "completed"
	})
	got := decodeExt[extToolResult](t, done.Result)
	assert.Equal(t, "posted", decodeExt[eventWait](t, got.StructuredContent).Reason)

	raw, rerr = modern.call("wait_for_event", map[string]any{"name": "task-2026"})
	require.Nil(t, rerr, rerr.String())
	inline := decodeExt[extToolResult](t, raw)
	assert.Equal(t, "complete", inline.ResultType, "the kept post answers inline")
	assert.True(t, decodeExt[eventWait](t, inline.StructuredContent).Latched)
}

// Split roles on one Temporal: a wait on one front end, a post (over MCP,
// then over its hook endpoint) on another. The front end that took the
// post holds no call of the wait, so the wait's answer comes from its
// workflow, which the latch's signal closed; the worker's SubscribeEvent
// and the fronts' posts reach the same latch.
func TestAPostOnOneFrontEndAnswersAWaitOnAnother(t *testing.T) {
	w := newWorkspace(t)
	engine, tc := devServerWithSearchAttributes(t)
	w.startRole("worker", w.writeConfigAt("worker.toml", w.path("worker-data"), ""), engine)
	a := w.startFront(w.writeConfigAt("front-a.toml", w.path("front-a-data"), ""), engine)
	b := w.startFront(w.writeConfigAt("front-b.toml", w.path("front-b-data"), ""), engine)
	waiter, poster := a.client(t), b.client(t)

	for round, post := range []func(name string){
		func(name string) { poster.postEvent(t, map[string]any{"name": name, "payload": "over MCP"}) },
		func(name string) {
			status, body := curlPost(t, "http://"+b.http+"/hooks/"+name, []byte(`"over the hook"`), "Idempotency-Key: split-1")
			require.Equal(t, 200, status, body)
		},
	} {
		name := "split-" + itoa(round)
		answered := make(chan eventWait, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			got, err := waiter.tryWaitEvent(ctx, map[string]any{"name": name})
			if err != nil {
				t.Error(err)
			}
			answered <- got
		}()
		eventually(t, "the wait subscribed", func() bool {
			_, err := tc.DescribeWorkflowExecution(context.Background(), "event/"+name, "")
			return err == nil
		})
		post(name)
		got := <-answered
		assert.Equal(t, "posted", got.Reason, "round %d", round)
		require.NotNil(t, got.Event)
		assert.False(t, got.Latched, "round %d", round)
	}
}

// An operator cancels a wait_for_event with `durawait waits cancel`: the
// waiting call answers reason cancelled, naming who and why, as an error.
func TestAnOperatorCancelsAnEventWait(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig()
	inst := w.startServe(config)
	c := inst.client(t)
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		res, err := c.call(ctx, "wait_for_event", map[string]any{"name": "never-posted"}, "")
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	rows := w.waitsListed(1, "--config", config, "--running", "--tool", "wait_for_event")
	out, errOut, ok := w.waits("cancel", rows[0].ID, "--config", config, "--reason", "release called off")
	require.True(t, ok, errOut)
	assert.Contains(t, out, "cancel requested")
	res := <-done
	require.NotNil(t, res)
	assert.True(t, res.IsError)
	var got struct {
		eventWait
		Cancelled struct{ By, Cause string } `json:"cancelled"`
	}
	structuredAs(t, res, &got)
	assert.Equal(t, "cancelled", got.Reason)
	assert.Equal(t, "never-posted", got.Name)
	assert.True(t, strings.HasPrefix(got.Cancelled.By, "durawait-waits:"), got.Cancelled.By)
	assert.Equal(t, "release called off", got.Cancelled.Cause)
}
