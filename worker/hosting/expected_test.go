package hosting

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/durawait/durawait/activities"
	"github.com/durawait/durawait/workflows"
)

// laggingEngine is the part of Temporal a host's sweep reads, with a
// visibility that lists only what listed holds: a restarted engine's
// visibility trailing its last writes. Each run's history and status are
// what the engine itself knows.
type laggingEngine struct {
	client.Client
	mu        sync.Mutex
	listed    []loopKey
	histories map[loopKey][]*historypb.HistoryEvent
	closed    map[loopKey]bool
	// forgotten are the workflows past their retention (NotFound).
	forgotten map[string]bool
}

func (e *laggingEngine) ListWorkflow(context.Context, *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	resp := &workflowservice.ListWorkflowExecutionsResponse{}
	for _, k := range e.listed {
		resp.Executions = append(resp.Executions, &workflowpb.WorkflowExecutionInfo{
			Execution: &commonpb.WorkflowExecution{WorkflowId: k.workflowID, RunId: k.runID},
		})
	}
	return resp, nil
}

func (e *laggingEngine) GetWorkflowHistory(_ context.Context, workflowID, runID string, _ bool, _ enumspb.HistoryEventFilterType) client.HistoryEventIterator {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.forgotten[workflowID] {
		return &eventIterator{err: serviceerror.NewNotFound("workflow not found")}
	}
	return &eventIterator{events: e.histories[loopKey{workflowID, runID}]}
}

func (e *laggingEngine) DescribeWorkflowExecution(_ context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.forgotten[workflowID] {
		return nil, serviceerror.NewNotFound("workflow not found")
	}
	status := enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	if e.closed[loopKey{workflowID, runID}] {
		status = enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{
		WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Status: status},
	}, nil
}

type eventIterator struct {
	events []*historypb.HistoryEvent
	err    error
}

func (it *eventIterator) HasNext() bool { return len(it.events) > 0 || it.err != nil }

func (it *eventIterator) Next() (*historypb.HistoryEvent, error) {
	if it.err != nil {
		return nil, it.err
	}
	if len(it.events) == 0 {
		return nil, errors.New("no more events")
	}
	ev := it.events[0]
	it.events = it.events[1:]
	return ev, nil
}

// scheduledProbeLoop is the history of a wait_for whose probe loop was
// scheduled on host's queue at scheduled, and not answered.
func scheduledProbeLoop(t *testing.T, host string, scheduled time.Time) []*historypb.HistoryEvent {
	t.Helper()
	input, err := converter.GetDefaultDataConverter().ToPayloads(workflows.PollInput{
		Spec: workflows.WaitForSpec{
			Probe: workflows.Probe{Tool: "demo.read_file", Args: json.RawMessage(`{}`)},
			Until: workflows.Until{Kind: workflows.ConditionMatches, Pattern: "^READY"}, PollSec: 1, MaxWaitSec: 60,
		},
		StartedAt: scheduled,
	})
	require.NoError(t, err)
	return []*historypb.HistoryEvent{{
		EventId: 5, EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, EventTime: timestamppb.New(scheduled),
		Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
			ActivityId: "5", ActivityType: &commonpb.ActivityType{Name: workflows.PollProbeActivityName},
			TaskQueue: &taskqueuepb.TaskQueue{Name: workflows.HostQueue("q", host)}, Input: input,
		}},
	}}
}

// callingProber tells of each probe call, and holds it until its context
// ends.
type callingProber struct{ calls chan string }

func (p callingProber) CallProbe(ctx context.Context, _ string, _ json.RawMessage) (activities.ProbeOutput, error) {
	select {
	case p.calls <- "called":
	default:
	}
	<-ctx.Done()
	return activities.ProbeOutput{}, ctx.Err()
}

// hostOnLaggingEngine is a host "h" whose journal is in dir, on engine.
func hostOnLaggingEngine(t *testing.T, engine *laggingEngine, dir string, prober callingProber) *Runtime {
	t.Helper()
	r, err := New(Options{
		Client: engine, Namespace: "default", TaskQueue: "q", Host: "h", Instance: "h-1", Machine: "m",
		JournalDir: dir, Poller: &activities.Poller{Prober: prober},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		r.cancel()
		r.loops.drop("", errStopping)
	})
	return r
}

// A wait whose loop activity was handed to a poll of a process that was
// then killed is in no journal, and a restarted engine's visibility may
// not list it for tens of seconds (the full soak on ddcdb74). Its host
// expected it when its front started it: the restarted host's first sweep
// finds it in Temporal directly and resumes its loop, though visibility
// lists nothing; a wait it did not expect waits for visibility.
func TestAnExpectedWaitIsResumedBeforeVisibilityListsIt(t *testing.T) {
	dir := t.TempDir()
	expectedKey := loopKey{"wait_for/expected", "run-1"}
	unexpectedKey := loopKey{"wait_for/unexpected", "run-2"}
	scheduled := time.Now().Add(-time.Second)
	engine := &laggingEngine{histories: map[loopKey][]*historypb.HistoryEvent{
		expectedKey: scheduledProbeLoop(t, "h", scheduled), unexpectedKey: scheduledProbeLoop(t, "h", scheduled),
	}}

	before := hostOnLaggingEngine(t, engine, dir, callingProber{calls: make(chan string, 1)})
	before.ExpectLoop(expectedKey.workflowID, expectedKey.runID)
	// ... and the process is killed before the loop starts or journals.

	prober := callingProber{calls: make(chan string, 1)}
	restarted := hostOnLaggingEngine(t, engine, dir, prober)
	require.True(t, restarted.sweep(context.Background(), sweepTarget{host: "h", own: true, since: time.Now()}))
	assert.True(t, restarted.loops.has(expectedKey), "the expected wait's loop is resumed")
	assert.False(t, restarted.loops.has(unexpectedKey), "a wait nobody expected waits for visibility")
	select {
	case <-prober.calls:
	case <-time.After(10 * time.Second):
		t.Fatal("the resumed loop never called its probe")
	}

	// Its loop runs here now (and is journaled): the expectation is done.
	require.True(t, restarted.sweep(context.Background(), sweepTarget{host: "h", own: true, since: time.Now()}))
	keys, err := restarted.loops.journal.expectedKeys()
	require.NoError(t, err)
	assert.Empty(t, keys)
	entries, err := restarted.loops.journal.entries()
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, expectedKey, entries[0].key())
}

// An expectation ends when visibility lists the wait (the sweep's list
// takes over), or when its run ended; one whose loop is not scheduled yet
// (its first workflow task has not run) is kept.
func TestAnExpectationEndsWhenVisibilityListsTheWaitOrItsRunEnds(t *testing.T) {
	dir := t.TempDir()
	listed := loopKey{"wait_for/listed", "run-1"}
	ended := loopKey{"wait_for/ended", "run-2"}
	notYet := loopKey{"wait_for/not-yet", "run-3"}
	engine := &laggingEngine{
		listed:    []loopKey{listed},
		histories: map[loopKey][]*historypb.HistoryEvent{},
		closed:    map[loopKey]bool{ended: true},
	}
	r := hostOnLaggingEngine(t, engine, dir, callingProber{calls: make(chan string, 1)})
	for _, k := range []loopKey{listed, ended, notYet} {
		r.ExpectLoop(k.workflowID, k.runID)
	}
	require.True(t, r.sweep(context.Background(), sweepTarget{host: "h", own: true, since: time.Now()}))
	keys, err := r.loops.journal.expectedKeys()
	require.NoError(t, err)
	assert.Equal(t, []loopKey{notYet}, keys)
}

// A noted wait that ended with its loop open (an operator terminated it
// while its host was down) is not resumed, and its note is forgotten; so
// is a note Temporal has no run for (past retention, a restored backup's).
func TestANoteOfAnEndedOrUnknownRunIsForgottenNotResumed(t *testing.T) {
	dir := t.TempDir()
	terminated := loopKey{"wait_for/terminated", "run-1"}
	unknown := loopKey{"wait_for/unknown", "run-2"}
	history := scheduledProbeLoop(t, "h", time.Now().Add(-time.Minute))
	history = append(history, &historypb.HistoryEvent{EventId: 6, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
		EventTime: timestamppb.Now()})
	engine := &laggingEngine{
		histories: map[loopKey][]*historypb.HistoryEvent{terminated: history},
		closed:    map[loopKey]bool{terminated: true},
		forgotten: map[string]bool{unknown.workflowID: true},
	}
	prober := callingProber{calls: make(chan string, 1)}
	r := hostOnLaggingEngine(t, engine, dir, prober)
	r.ExpectLoop(terminated.workflowID, terminated.runID)
	r.ExpectLoop(unknown.workflowID, unknown.runID)
	require.True(t, r.sweep(context.Background(), sweepTarget{host: "h", own: true, since: time.Now()}),
		"a run Temporal does not know is no failure to sweep again for")
	assert.False(t, r.loops.has(terminated), "an ended run's loop is not resumed")
	keys, err := r.loops.journal.expectedKeys()
	require.NoError(t, err)
	assert.Empty(t, keys)
}

// The journal's folder of expected loops survives the journal's prune of
// old entries.
func TestTheJournalsPruneKeepsItsFolderOfExpectedLoops(t *testing.T) {
	j, err := newLoopJournal(t.TempDir())
	require.NoError(t, err)
	j.prune(time.Now().Add(2*journalTTL), func(loopKey) bool { return false })
	key := loopKey{"wait_for/a", "run-1"}
	require.NoError(t, j.expect(key))
	keys, err := j.expectedKeys()
	require.NoError(t, err)
	assert.Equal(t, []loopKey{key}, keys)
	j.pruneExpected(time.Now().Add(2 * journalTTL))
	keys, err = j.expectedKeys()
	require.NoError(t, err)
	assert.Empty(t, keys, "an expectation older than the journal's TTL is pruned")
}

// The own host's sweep removes the spool of an agent invocation whose CLI
// ended once Temporal no longer keeps the invocation (its retention
// passed), and keeps one Temporal still knows.
func TestASweepRemovesTheSpoolOfAnInvocationPastItsRetention(t *testing.T) {
	spool := t.TempDir()
	forgotten, kept := "agent/"+strings.Repeat("a", 32), "agent/"+strings.Repeat("b", 32)
	for _, id := range []string{forgotten, kept} {
		dir := filepath.Join(spool, strings.ReplaceAll(id, "/", "_"))
		require.NoError(t, os.MkdirAll(dir, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "invocation"), []byte(id), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "exit"), []byte("0"), 0o600))
	}
	engine := &laggingEngine{histories: map[loopKey][]*historypb.HistoryEvent{}, forgotten: map[string]bool{forgotten: true}}
	r, err := New(Options{
		Client: engine, Namespace: "default", TaskQueue: "q", Host: "h", Instance: "h-1", Machine: "m",
		Poller: &activities.Poller{}, Agents: &activities.AgentRunner{SpoolDir: spool},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	require.True(t, r.sweep(context.Background(), sweepTarget{host: "h", own: true, since: time.Now()}))
	r.wg.Wait() // the prune runs beside the sweep
	assert.NoDirExists(t, filepath.Join(spool, "agent_"+strings.Repeat("a", 32)))
	assert.DirExists(t, filepath.Join(spool, "agent_"+strings.Repeat("b", 32)))
}
