package readiness

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// fakeTemporal answers the two calls the checks make.
type fakeTemporal struct {
	client.Client
	healthErr error
	pollers   []*taskqueuepb.PollerInfo
	queue     string
}

func (f *fakeTemporal) CheckHealth(context.Context, *client.CheckHealthRequest) (*client.CheckHealthResponse, error) {
	return &client.CheckHealthResponse{}, f.healthErr
}

func (f *fakeTemporal) DescribeTaskQueue(_ context.Context, queue string, typ enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	f.queue = queue
	if typ != enumspb.TASK_QUEUE_TYPE_WORKFLOW {
		return nil, errors.New("unexpected task queue type")
	}
	return &workflowservice.DescribeTaskQueueResponse{Pollers: f.pollers}, nil
}

var now = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func get(t *testing.T, h http.Handler) (int, Report) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	var rep Report
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &rep), rec.Body.String())
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	return rec.Code, rep
}

func TestReadyWhenTemporalAnswersAndAWorkerPolls(t *testing.T) {
	tc := &fakeTemporal{pollers: []*taskqueuepb.PollerInfo{{Identity: "1@host", LastAccessTime: timestamppb.New(now.Add(-10 * time.Second))}}}
	h := &Handler{}
	h.SetChecks(Temporal(tc, "127.0.0.1:7233"), Workers(tc, "durawait", func() time.Time { return now }))
	code, rep := get(t, h)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ready", rep.Status)
	assert.Equal(t, Result{OK: true, Detail: "Temporal at 127.0.0.1:7233 answers"}, rep.Checks["temporal"])
	assert.Equal(t, Result{OK: true, Detail: `1 worker(s) poll task queue "durawait"`}, rep.Checks["workers"])
	assert.Empty(t, rep.Failed)
	assert.Equal(t, "durawait", tc.queue)
}

func TestNotReadyNamesWhatFailed(t *testing.T) {
	// A poller last seen five minutes ago is a dead worker.
	tc := &fakeTemporal{healthErr: errors.New("connection refused"),
		pollers: []*taskqueuepb.PollerInfo{{LastAccessTime: timestamppb.New(now.Add(-5 * time.Minute))}}}
	h := &Handler{}
	h.SetChecks(Temporal(tc, "127.0.0.1:7233"), Workers(tc, "durawait", func() time.Time { return now }))
	code, rep := get(t, h)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "not ready", rep.Status)
	assert.Equal(t, []string{"temporal", "workers"}, rep.Failed)
	assert.False(t, rep.Checks["temporal"].OK)
	assert.Contains(t, rep.Checks["temporal"].Detail, "connection refused")
	assert.Contains(t, rep.Checks["workers"].Detail, `no worker polls task queue "durawait"`)
}

func TestStartingUntilChecksAreSet(t *testing.T) {
	code, rep := get(t, &Handler{})
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "starting", rep.Status)
}

// A check that hangs is cut at the timeout and reported as failed.
func TestACheckIsBoundedByTheTimeout(t *testing.T) {
	h := &Handler{Timeout: 20 * time.Millisecond}
	h.SetChecks(Check{Name: "slow", Run: func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}})
	code, rep := get(t, h)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, []string{"slow"}, rep.Failed)
	assert.Contains(t, rep.Checks["slow"].Detail, "deadline exceeded")
}

// Once the process drains, /readyz fails at once, with no check run.
func TestDrainingIsNotReady(t *testing.T) {
	runs := 0
	h := &Handler{}
	h.SetChecks(Check{Name: "ok", Run: func(context.Context) (string, error) { runs++; return "fine", nil }})
	code, _ := get(t, h)
	require.Equal(t, http.StatusOK, code)
	h.SetDraining()
	code, rep := get(t, h)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "draining", rep.Status)
	assert.Equal(t, []string{"draining"}, rep.Failed)
	assert.Equal(t, 1, runs, "draining runs no check")
}

// Probes within CacheFor share one round of checks.
func TestReportsAreCachedBriefly(t *testing.T) {
	var runs atomic.Int32
	clock := now
	h := &Handler{Now: func() time.Time { return clock }}
	h.SetChecks(Check{Name: "ok", Run: func(context.Context) (string, error) { runs.Add(1); return "fine", nil }})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { get(t, h) })
	}
	wg.Wait()
	assert.Equal(t, int32(1), runs.Load(), "one round for 20 probes within a second")
	clock = clock.Add(DefaultCacheFor)
	get(t, h)
	assert.Equal(t, int32(2), runs.Load(), "a new round once the report is a second old")
}
