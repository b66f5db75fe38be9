package mcpfront

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/durawait/durawait/internal/samplehub"
	"github.com/durawait/durawait/workflows"
)

// fakeTemporal stands in for the two Temporal client calls the
// start/attach/settle dance makes: ExecuteWorkflow, with the semantics of
// conflict policy USE_EXISTING and reuse policy ALLOW_DUPLICATE, and
// GetWorkflow. Any other call panics (the embedded client is nil).
type fakeTemporal struct {
	client.Client

	// onStart, when set, runs inside ExecuteWorkflow when it starts a new
	// run, before ExecuteWorkflow returns: an activity that knows the
	// outcome at once.
	onStart func(run *fakeRun)
	// watching receives the run ID of each GetWorkflow(...).Get as it
	// begins to wait.
	watching chan string

	mu     sync.Mutex
	runs   map[string]*fakeRun // the latest run of each workflow ID
	starts int                 // ExecuteWorkflow calls
}

func newFakeTemporal() *fakeTemporal {
	return &fakeTemporal{runs: map[string]*fakeRun{}, watching: make(chan string, 16)}
}

func (c *fakeTemporal) ExecuteWorkflow(_ context.Context, opts client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	if opts.WorkflowIDConflictPolicy != enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING ||
		opts.WorkflowIDReusePolicy != enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE {
		return nil, fmt.Errorf("unexpected policies %v / %v", opts.WorkflowIDConflictPolicy, opts.WorkflowIDReusePolicy)
	}
	c.mu.Lock()
	c.starts++
	if run := c.runs[opts.ID]; run != nil && !run.closed() {
		c.mu.Unlock()
		return run, nil // attached
	}
	run := &fakeRun{id: opts.ID, runID: fmt.Sprintf("run-%d", c.starts), done: make(chan struct{})}
	c.runs[opts.ID] = run
	c.mu.Unlock()
	if c.onStart != nil {
		c.onStart(run)
	}
	return run, nil
}

func (c *fakeTemporal) GetWorkflow(_ context.Context, workflowID, runID string) client.WorkflowRun {
	c.mu.Lock()
	defer c.mu.Unlock()
	run := c.runs[workflowID]
	if run == nil || run.runID != runID {
		panic(fmt.Sprintf("GetWorkflow of an unknown run %s/%s", workflowID, runID))
	}
	return watchedRun{run, c.watching}
}

// ListWorkflow lists the closed runs (the front's look for closes).
func (c *fakeTemporal) ListWorkflow(_ context.Context, _ *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &workflowservice.ListWorkflowExecutionsResponse{}
	for _, run := range c.runs {
		if run.closed() {
			resp.Executions = append(resp.Executions, &workflowpb.WorkflowExecutionInfo{
				Execution: &commonpb.WorkflowExecution{WorkflowId: run.id, RunId: run.runID},
				Status:    enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
			})
		}
	}
	return resp, nil
}

func (c *fakeTemporal) startCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.starts
}

// fakeRun is one workflow run; close completes it with a result.
type fakeRun struct {
	client.WorkflowRun
	id, runID string
	done      chan struct{}
	result    []byte
}

func (r *fakeRun) GetID() string    { return r.id }
func (r *fakeRun) GetRunID() string { return r.runID }

func (r *fakeRun) Get(ctx context.Context, valuePtr any) error {
	select {
	case <-r.done:
		if valuePtr == nil {
			return nil
		}
		return json.Unmarshal(r.result, valuePtr)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *fakeRun) close(t *testing.T, result any) {
	b, err := json.Marshal(result)
	require.NoError(t, err)
	r.result = b
	close(r.done)
}

func (r *fakeRun) closed() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// watchedRun is a run looked up with GetWorkflow: it tells when a caller
// begins to wait for it.
type watchedRun struct {
	*fakeRun
	watching chan<- string
}

func (r watchedRun) Get(ctx context.Context, valuePtr any) error {
	r.watching <- r.runID
	return r.fakeRun.Get(ctx, valuePtr)
}

// dance is a Front on a fake Temporal client and an in-process feed.
type dance struct {
	front    *Front
	temporal *fakeTemporal
	hub      *samplehub.Hub
}

func newDance() dance {
	tc, hub := newFakeTemporal(), samplehub.New()
	front := New(Options{Temporal: tc, Events: hub, TaskQueue: "q", Workers: fakeDownstream{}})
	front.closes.interval = 10 * time.Millisecond
	return dance{front: front, temporal: tc, hub: hub}
}

var danceWait = sharedWait{id: "wait_for/0123abcd", workflow: workflows.WaitForWorkflowName}

// answer is what one call of the dance got.
type answer struct {
	run     client.WorkflowRun
	samples []workflows.Sample
	result  workflows.WaitForResult
	err     error
}

// call is one wait_for call's dance: the run it started or attached to, the
// samples it saw and its outcome.
func (d dance) call(ctx context.Context) answer {
	run, events, unsubscribe, err := d.front.startOrAttach(ctx, danceWait)
	if err != nil {
		return answer{err: err}
	}
	defer unsubscribe()
	var (
		samples []workflows.Sample
		result  workflows.WaitForResult
	)
	err = d.front.awaitOutcome(ctx, run, events, time.Minute, &result, func(ev workflows.WaitEvent) bool {
		switch e := ev.(type) {
		case workflows.Sample:
			samples = append(samples, e)
		case workflows.WaitForResult:
			result = e
			return true
		}
		return false
	})
	return answer{run, samples, result, err}
}

// testContext bounds a test that would otherwise hang on a lost event.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestAnEventBeforeTemporalsAnswerIsTheAnswerAndTheRunSettles(t *testing.T) {
	d := newDance()
	fromFeed := workflows.WaitForResult{Reason: workflows.WaitReasonMatched, Samples: 2}
	d.temporal.onStart = func(run *fakeRun) {
		d.hub.Observe(run.id, workflows.Sample{Number: 1, Observation: "building"})
		d.hub.Observe(run.id, workflows.Sample{Number: 2, Observation: "done"})
		d.hub.Observe(run.id, fromFeed)
	}

	got := d.call(testContext(t))
	require.NoError(t, got.err)
	run := got.run

	assert.Equal(t, fromFeed, got.result, "the feed's outcome is the answer; Temporal has not answered")
	assert.Equal(t, []workflows.Sample{{Number: 1, Observation: "building"}, {Number: 2, Observation: "done"}}, got.samples,
		"every event before the outcome is seen, in order")
	settling, ok := d.front.settling.Load(danceWait.id)
	require.True(t, ok, "a run answered from the feed settles")
	assert.Equal(t, run.GetRunID(), settling)

	time.Sleep(50 * time.Millisecond) // several looks for closes
	_, ok = d.front.settling.Load(danceWait.id)
	require.True(t, ok, "settling waits for the run to close")
	run.(*fakeRun).close(t, fromFeed)
	assert.Eventually(t, func() bool { _, ok := d.front.settling.Load(danceWait.id); return !ok }, 10*time.Second, time.Millisecond,
		"a closed run is settled")
}

func TestTemporalsAnswerIsTheAnswerWhenNoEventComes(t *testing.T) {
	d := newDance()
	fromTemporal := workflows.WaitForResult{Reason: workflows.WaitReasonTimeout, Samples: 3, LastObservation: "still building"}
	d.temporal.onStart = func(run *fakeRun) { run.close(t, fromTemporal) }

	got := d.call(testContext(t))
	require.NoError(t, got.err)

	assert.Equal(t, fromTemporal, got.result)
	assert.Empty(t, got.samples)
	_, settling := d.front.settling.Load(danceWait.id)
	assert.False(t, settling, "a run Temporal answered for is closed: nothing settles")
}

func TestAnIdenticalCallAfterAnEarlyAnswerStartsANewRun(t *testing.T) {
	d := newDance()
	ctx := testContext(t)
	outcome := workflows.WaitForResult{Reason: workflows.WaitReasonMatched, Samples: 1}
	d.temporal.onStart = func(run *fakeRun) { d.hub.Observe(run.id, outcome) }
	early := d.call(ctx)
	require.NoError(t, early.err)
	first := early.run
	require.Equal(t, 1, d.temporal.startCount())

	// The identical call comes while the first run is still open.
	second := make(chan answer, 1)
	go func() { second <- d.call(ctx) }()
	// The second call waits for the first run to close (its settling
	// sees the close in the look for closes) before it starts.
	for range 1 {
		select {
		case runID := <-d.temporal.watching:
			require.Equal(t, first.GetRunID(), runID)
		case got := <-second:
			t.Fatalf("the second call answered before the first run closed: %+v", got)
		case <-ctx.Done():
			t.Fatalf("the second call did not wait for the first run to close (ExecuteWorkflow called %d times)", d.temporal.startCount())
		}
	}
	assert.Equal(t, 1, d.temporal.startCount(), "the second call does not attach to the finished run")

	first.(*fakeRun).close(t, outcome)
	got := <-second
	require.NoError(t, got.err)
	assert.Equal(t, 2, d.temporal.startCount())
	assert.NotEqual(t, first.GetRunID(), got.run.GetRunID(), "the second call has a run of its own")
	assert.Equal(t, outcome, got.result)
}

func TestNoEventIsLostBetweenTheStartAndTheSubscription(t *testing.T) {
	d := newDance()
	outcome := workflows.WaitForResult{Reason: workflows.WaitReasonFailed, Samples: 1, LastObservation: "FAIL"}
	// The activity knows the outcome before ExecuteWorkflow returns, and
	// Temporal never answers: only the feed can.
	d.temporal.onStart = func(run *fakeRun) { d.hub.Observe(run.id, outcome) }

	got := d.call(testContext(t))
	require.NoError(t, got.err)
	assert.Equal(t, outcome, got.result)
}

// reportingTemporal is fakeTemporal telling the start report whether
// each ExecuteWorkflow started the run or attached, as StartReporter does
// from Temporal's answer.
type reportingTemporal struct{ *fakeTemporal }

func (c reportingTemporal) ExecuteWorkflow(ctx context.Context, opts client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	c.mu.Lock()
	existing := c.runs[opts.ID]
	c.mu.Unlock()
	run, err := c.fakeTemporal.ExecuteWorkflow(ctx, opts, wf, args...)
	if r, ok := ctx.Value(startReportKey{}).(*startReport); ok && err == nil {
		r.mu.Lock()
		r.seen, r.started = true, existing != run
		r.mu.Unlock()
	}
	return run, err
}

// A front with a worker in its process tells that worker's host of each
// wait it starts there, once Temporal took the start (and before the
// call blocks on its answer): the host's restart finds the wait's loop
// before visibility lists it. A call that attaches to a running wait tells
// nothing (the wait was noted at its start); a front with no host of its
// own tells none.
func TestAFrontTellsItsHostOfEachWaitItStartsThere(t *testing.T) {
	for _, host := range []string{"h", ""} {
		d := newDance()
		f := New(Options{Temporal: reportingTemporal{d.temporal}, Events: d.hub, TaskQueue: "q", Workers: fakeDownstream{}, Host: host})
		var expected []string
		f.opts.ExpectLoop = func(workflowID, runID string) { expected = append(expected, workflowID+"/"+runID) }
		run, _, unsubscribe, err := f.startOrAttach(testContext(t), danceWait)
		require.NoError(t, err)
		unsubscribe()
		again, _, unsubscribe, err := f.startOrAttach(testContext(t), danceWait)
		require.NoError(t, err)
		unsubscribe()
		require.Equal(t, run.GetRunID(), again.GetRunID(), "the second call attached")
		if host == "" {
			assert.Empty(t, expected)
			continue
		}
		assert.Equal(t, []string{run.GetID() + "/" + run.GetRunID()}, expected, "the start only")
	}
}
