package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// wait_for_event and post_event take their schemas' arguments, with the
// defaults; every broken rule names its field.
func TestParseEventToolsNameTheFieldOfEachBrokenRule(t *testing.T) {
	spec, err := ParseWaitForEvent(json.RawMessage(`{"name":"ci.done-1_x"}`))
	require.NoError(t, err)
	assert.Equal(t, WaitForEventSpec{Name: "ci.done-1_x", MaxWaitSec: DefaultMaxWaitSec}, spec)
	spec, err = ParseWaitForEvent(json.RawMessage(`{"name":"x","after_seq":2.0}`))
	require.NoError(t, err)
	assert.Equal(t, int64(2), spec.AfterSeq, "2.0 is a whole number")
	spec, err = ParseWaitForEvent(json.RawMessage(`{"name":"x","after_seq":1e3}`))
	require.NoError(t, err)
	assert.Equal(t, int64(1000), spec.AfterSeq)
	spec, err = ParseWaitForEvent(json.RawMessage(`{"name":"x","match":"ok","after_seq":7,"max_wait_sec":900}`))
	require.NoError(t, err)
	assert.Equal(t, WaitForEventSpec{Name: "x", Match: "ok", AfterSeq: 7, MaxWaitSec: MaxWaitCeilingSec}, spec, "clamped to 300")

	post, err := ParsePostEvent(json.RawMessage(`{"name":"x","payload":{ "b" : [1, 2] },"delivery_id":"gh-1"}`))
	require.NoError(t, err)
	assert.Equal(t, PostEventSpec{Name: "x", Payload: json.RawMessage(`{"b":[1,2]}`), DeliveryID: "gh-1"}, post, "compact JSON")
	post, err = ParsePostEvent(json.RawMessage(`{"name":"x"}`))
	require.NoError(t, err)
	assert.Equal(t, json.RawMessage("null"), post.Payload, "null when omitted")

	for args, want := range map[string]string{
		`{}`:            "name: is required",
		`{"name":""}`:   "name: must not be empty",
		`{"name":"-x"}`: `name: "-x" must match ^[A-Za-z0-9][A-Za-z0-9._-]*$`,
		`{"name":"` + strings.Repeat("a", 101) + `"}`: "name: must be at most 100 bytes (got 101)",
		`{"name":3}`:                     "name: must be a string (got a number)",
		`{"name":"x","match":""}`:        "match: must not be empty",
		`{"name":"x","match":"a("}`:      "match: is not a valid regular expression",
		`{"name":"x","after_seq":1.5}`:   "after_seq: must be a whole number of at least 0 (got 1.5)",
		`{"name":"x","after_seq":"1"}`:   "after_seq: must be a whole number (got a string)",
		`{"name":"x","max_wait_sec":-1}`: "max_wait_sec: must be greater than zero (got -1)",
		`{"name":"x","payload":1}`:       "payload: unknown field (allowed here: name, match, after_seq, max_wait_sec)",
	} {
		_, err := ParseWaitForEvent(json.RawMessage(args))
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), want, args)
	}
	for args, want := range map[string]string{
		`{"payload":1}`:                    "name: is required",
		`{"name":"x","delivery_id":""}`:    "delivery_id: must not be empty",
		`{"name":"x","delivery_id":"a b"}`: "delivery_id: must be printable ASCII without spaces",
		`{"name":"x","delivery_id":"` + strings.Repeat("d", 129) + `"}`:              "delivery_id: must be at most 128 bytes (got 129)",
		`{"name":"x","payload":"` + strings.Repeat("p", MaxEventPayloadBytes) + `"}`: "payload: must be at most 65536 bytes as compact JSON (got 65538)",
		`{"name":"x","match":"y"}`: "match: unknown field (allowed here: name, payload, delivery_id)",
	} {
		_, err := ParsePostEvent(json.RawMessage(args))
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), want, args)
	}
}

// An event's latch is the poster's own (its principal's tag in the ID) or
// shared; the waits on it are their caller's, one ID per call's arguments.
func TestEventIDsBelongToTheirPrincipal(t *testing.T) {
	assert.Equal(t, "event/ci-done", EventLatchID("", "ci-done", false))
	alice := EventLatchID("alice", "ci-done", false)
	assert.True(t, strings.HasPrefix(alice, "event/p"), alice)
	assert.NotEqual(t, alice, EventLatchID("bob", "ci-done", false))
	assert.True(t, Owns("alice", alice))
	assert.False(t, Owns("bob", alice))
	assert.Equal(t, "event/shared/ci-done", EventLatchID("alice", "ci-done", true))
	assert.Equal(t, EventLatchID("alice", "ci-done", true), EventLatchID("bob", "ci-done", true))

	spec := WaitForEventSpec{Name: "ci-done", MaxWaitSec: 60}
	id := spec.WorkflowID(alice, "alice")
	assert.True(t, strings.HasPrefix(id, WaitForEventIDPrefix), id)
	assert.True(t, Owns("alice", id))
	assert.Equal(t, id, spec.WorkflowID(alice, "alice"), "the same call attaches to the same wait")
	spec.AfterSeq = 1
	assert.NotEqual(t, id, spec.WorkflowID(alice, "alice"))
	assert.Equal(t, ToolWaitForEvent, ToolOfWorkflowID(id))
	assert.Equal(t, ToolPostEvent, ToolOfWorkflowID(alice))
}

// A latch keeps the newest posts within its count and byte bounds and the
// retention, forgets what outlived the retention, and tells a wait the
// newest post that passes its filter.
func TestALatchKeepsItsNewestPostsWithinItsBounds(t *testing.T) {
	now := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	l := &latch{in: EventLatchInput{Retention: time.Hour}}
	for i := 1; i <= MaxLatchedPosts+3; i++ {
		l.in.Posts = append(l.in.Posts, EventPost{Seq: int64(i), Payload: json.RawMessage(`1`), PostedAt: now})
		l.trimPosts()
	}
	require.Len(t, l.in.Posts, MaxLatchedPosts)
	assert.Equal(t, int64(4), l.in.Posts[0].Seq, "the oldest went first")

	big := json.RawMessage(`"` + strings.Repeat("b", MaxEventPayloadBytes-2) + `"`)
	for i := 0; i < MaxLatchedBytes/MaxEventPayloadBytes+1; i++ {
		l.in.Posts = append(l.in.Posts, EventPost{Seq: int64(100 + i), Payload: big, PostedAt: now})
		l.trimPosts()
	}
	total := 0
	for _, p := range l.in.Posts {
		total += len(p.Payload)
	}
	assert.LessOrEqual(t, total, MaxLatchedBytes)

	l.in.Posts = []EventPost{{Seq: 1, PostedAt: now.Add(-2 * time.Hour)}, {Seq: 2, PostedAt: now.Add(-time.Minute), Payload: json.RawMessage(`{"ok":true}`)}}
	l.in.Deliveries = []EventDelivery{{ID: "old", Seq: 1, At: now.Add(-2 * time.Hour)}, {ID: "new", Seq: 2, At: now.Add(-time.Minute)}}
	l.in.Subscribers = []EventSubscription{{WaitID: "gone", Until: now.Add(-time.Second)}, {WaitID: "open", Until: now.Add(time.Minute)}}
	l.expire(now)
	assert.Equal(t, []int64{2}, seqs(l.in.Posts))
	assert.Len(t, l.in.Deliveries, 1)
	assert.Len(t, l.in.Subscribers, 1)
	next, ok := l.nextExpiry()
	assert.True(t, ok)
	assert.Equal(t, now.Add(time.Minute), next, "the open wait's bound comes first")

	assert.True(t, matchesPost(l.in.Posts[0], `"ok":true`, 0))
	assert.False(t, matchesPost(l.in.Posts[0], `"ok":false`, 0))
	assert.False(t, matchesPost(l.in.Posts[0], "", 2), "after_seq skips the post numbered 2")
}

// A post's number grows within a run and across the latch's runs: a new
// run numbers on from the time, above an earlier run's numbers.
func TestPostNumbersGrowAcrossTheLatchsRuns(t *testing.T) {
	now := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	first := nextSeq(0, now)
	assert.Equal(t, now.UnixMicro(), first)
	assert.Equal(t, first+1, nextSeq(first, now), "two posts in one microsecond")
	assert.Equal(t, first+1, nextSeq(first, now.Add(-time.Hour)), "a clock that went back")
	laterRun := nextSeq(0, now.Add(25*time.Hour))
	assert.Greater(t, laterRun, nextSeq(first+1000, now), "a run begun after the last ended numbers above it")
}

func seqs(posts []EventPost) []int64 {
	out := []int64{}
	for _, p := range posts {
		out = append(out, p.Seq)
	}
	return out
}

// The latch workflow: a post is kept and numbered, a repeated delivery ID
// is the first post, a wait is told a kept post at once or the next post
// that passes its filter, a wake-up every post from its subscription on;
// with nothing kept and no wait, the latch ends expired.
func TestTheLatchWorkflowTellsWaitsAndEndsWhenEmpty(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(EventLatch, workflow.RegisterOptions{Name: EventLatchWorkflowName})
	told := map[string][]int64{}
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", EventPostedSignal, mock.Anything).Return(
		func(_, waitID, _, _ string, arg any) error {
			told[waitID] = append(told[waitID], arg.(EventPost).Seq)
			return nil
		})
	answers := map[string]EventPostAnswer{}
	post := func(at time.Duration, key string, req EventPostRequest) {
		env.RegisterDelayedCallback(func() {
			env.UpdateWorkflow(EventPostUpdate, "", &testsuite.TestUpdateCallback{
				OnReject: func(err error) { t.Errorf("%s rejected: %v", key, err) },
				OnAccept: func() {},
				OnComplete: func(v any, err error) {
					require.NoError(t, err)
					answers[key] = v.(EventPostAnswer)
				},
			}, req)
		}, at)
	}
	subscribe := func(at time.Duration, s EventSubscription) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(EventSubscribeSignal, s) }, at)
	}
	start := env.Now()
	post(time.Second, "first", EventPostRequest{Payload: json.RawMessage(`{"n":1}`), Source: EventSourceMCP, DeliveryID: "d1"})
	subscribe(2*time.Second, EventSubscription{WaitID: "latched", Until: start.Add(time.Minute)})
	// after_seq: a seq between the first post's (at 1 s) and the second's.
	subscribe(2*time.Second, EventSubscription{WaitID: "next", AfterSeq: start.Add(1500 * time.Millisecond).UnixMicro(), Until: start.Add(time.Minute)})
	subscribe(2*time.Second, EventSubscription{WaitID: "wake", Wake: true, Until: start.Add(time.Minute)})
	subscribe(2*time.Second, EventSubscription{WaitID: "picky", Match: `"n":9`, Until: start.Add(10 * time.Second)})
	post(3*time.Second, "repeat", EventPostRequest{Payload: json.RawMessage(`{"n":1}`), Source: EventSourceHook, DeliveryID: "d1"})
	post(4*time.Second, "second", EventPostRequest{Payload: json.RawMessage(`{"n":2}`), Source: EventSourceHook})
	post(5*time.Second, "third", EventPostRequest{Payload: json.RawMessage(`{"n":3}`), Source: EventSourceMCP})
	// Started holding a wait (as signal-with-start starts it, or a run
	// continued as new), which nothing is posted for.
	env.ExecuteWorkflow(EventLatchWorkflowName, EventLatchInput{Name: "ci-done", Caller: "anonymous", Retention: time.Hour,
		Subscribers: []EventSubscription{{WaitID: "first", Match: "never", Until: start.Add(30 * time.Second)}}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())

	first, second, third := answers["first"].Post.Seq, answers["second"].Post.Seq, answers["third"].Post.Seq
	assert.Less(t, first, second)
	assert.Less(t, second, third)
	assert.True(t, answers["repeat"].Duplicate)
	assert.Equal(t, first, answers["repeat"].Post.Seq, "the first post, not a new one")
	assert.Equal(t, []AnsweredWait{{WaitID: "next"}}, answers["second"].Answered)
	assert.Equal(t, 1, answers["second"].Woken)
	assert.Empty(t, answers["third"].Answered, "a told wait is dropped")
	assert.Equal(t, []int64{first}, told["latched"], "the kept post, at once")
	assert.Equal(t, []int64{second}, told["next"])
	assert.Equal(t, []int64{second, third}, told["wake"], "every post from the subscription on")
	assert.Empty(t, told["picky"], "no post matched")
	assert.GreaterOrEqual(t, env.Now().Sub(start), time.Hour, "the latch lived until its last post outlived the retention")
}

// The wait workflow subscribes, answers the post it is told, or timeout at
// its bound.
func TestTheWaitForEventWorkflowAnswersAPostOrTimeout(t *testing.T) {
	run := func(t *testing.T, signal *EventPost) (EventWaitResult, EventSubscribeInput) {
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestWorkflowEnvironment()
		env.RegisterWorkflowWithOptions(WaitForEvent, workflow.RegisterOptions{Name: WaitForEventWorkflowName})
		var subscribed EventSubscribeInput
		env.RegisterActivityWithOptions(func(_ context.Context, in EventSubscribeInput) error {
			subscribed = in
			return nil
		}, activity.RegisterOptions{Name: SubscribeEventActivityName})
		if signal != nil {
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(EventPostedSignal, *signal) }, 10*time.Second)
		}
		latch := EventLatchRef{ID: "event/x", Start: EventLatchInput{Name: "x"}}
		env.ExecuteWorkflow(WaitForEventWorkflowName, WaitForEventInput{Spec: WaitForEventSpec{Name: "x", AfterSeq: 3, MaxWaitSec: 60}, Latch: latch})
		require.True(t, env.IsWorkflowCompleted())
		require.NoError(t, env.GetWorkflowError())
		var out EventWaitResult
		require.NoError(t, env.GetWorkflowResult(&out))
		return out, subscribed
	}
	t.Run("posted", func(t *testing.T) {
		out, sub := run(t, &EventPost{Seq: 4, Payload: json.RawMessage(`"go"`), PostedAt: time.Now().Add(time.Hour)})
		assert.Equal(t, EventReasonPosted, out.Reason)
		assert.Equal(t, int64(4), out.Event.Seq)
		assert.False(t, out.Latched)
		assert.Equal(t, "event/x", sub.Latch.ID)
		assert.Equal(t, int64(3), sub.Subscription.AfterSeq)
		assert.Equal(t, sub.Subscription.Started.Add(60*time.Second+subscriptionGrace), sub.Subscription.Until)
	})
	t.Run("a stray post is not the answer", func(t *testing.T) {
		out, _ := run(t, &EventPost{Seq: 3})
		assert.Equal(t, EventReasonTimeout, out.Reason)
	})
	t.Run("timeout", func(t *testing.T) {
		out, _ := run(t, nil)
		assert.Equal(t, EventReasonTimeout, out.Reason)
		assert.Nil(t, out.Event)
		assert.Equal(t, 60, out.EffectiveMaxWaitSec)
		assert.InDelta(t, 60, out.ElapsedSec, 1)
	})
}

// A latch that holds as many waits as it may refuses the next: the wait
// is told why, and ends with that error.
func TestAFullLatchRefusesAWaitAndTheWaitSaysWhy(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(EventLatch, workflow.RegisterOptions{Name: EventLatchWorkflowName})
	refused := map[string]string{}
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", EventRefusedSignal, mock.Anything).Return(
		func(_, waitID, _, _ string, arg any) error {
			refused[waitID] = arg.(string)
			return nil
		})
	start := env.Now()
	full := make([]EventSubscription, MaxEventSubscribers)
	for i := range full {
		full[i] = EventSubscription{WaitID: fmt.Sprintf("w%d", i), Until: start.Add(time.Minute)}
	}
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(EventSubscribeSignal, EventSubscription{WaitID: "one-too-many", Until: start.Add(time.Minute)})
	}, time.Second)
	env.ExecuteWorkflow(EventLatchWorkflowName, EventLatchInput{Name: "busy", Subscribers: full})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	assert.Contains(t, refused["one-too-many"], "event busy holds as many waits as it may (1000 waits")

	env = suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(WaitForEvent, workflow.RegisterOptions{Name: WaitForEventWorkflowName})
	env.RegisterActivityWithOptions(func(context.Context, EventSubscribeInput) error { return nil }, activity.RegisterOptions{Name: SubscribeEventActivityName})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(EventRefusedSignal, "event busy holds as many waits as it may") }, time.Second)
	env.ExecuteWorkflow(WaitForEventWorkflowName, WaitForEventInput{Spec: WaitForEventSpec{Name: "busy", MaxWaitSec: 60}, Latch: EventLatchRef{ID: "event/busy"}})
	require.True(t, env.IsWorkflowCompleted())
	err := env.GetWorkflowError()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "holds as many waits as it may")
}

// An operator's cancel ends a latch, cancelled.
func TestACancelledLatchEnds(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(EventLatch, workflow.RegisterOptions{Name: EventLatchWorkflowName})
	start := env.Now()
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(EventLatchWorkflowName, EventLatchInput{Name: "x", Retention: time.Hour,
		Posts: []EventPost{{Seq: 1, PostedAt: start, Payload: json.RawMessage(`1`)}}})
	require.True(t, env.IsWorkflowCompleted())
	require.Error(t, env.GetWorkflowError())
	assert.True(t, temporal.IsCanceledError(env.GetWorkflowError()), env.GetWorkflowError().Error())
	assert.Less(t, env.Now().Sub(start), time.Hour, "ended by the cancel, not the retention")
}
