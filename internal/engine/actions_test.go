package engine

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/server/common/metrics"
)

// actionsRecorded reads every metric the reader holds: the actions
// counter's points by action_type, and the names of all metrics.
func actionsRecorded(t *testing.T, reader *sdkmetric.ManualReader) (map[string]int64, []string) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	byType := map[string]int64{}
	var names []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			names = append(names, m.Name)
			if m.Name != ActionsMetric {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			require.True(t, ok, "%s is an int64 sum: %T", m.Name, m.Data)
			assert.True(t, sum.IsMonotonic, "a counter")
			for _, dp := range sum.DataPoints {
				require.Equal(t, 1, dp.Attributes.Len(), "action_type is the only attribute: %v", dp.Attributes.ToSlice())
				v, ok := dp.Attributes.Value(attribute.Key(ActionTypeAttribute))
				require.True(t, ok)
				byType[v.AsString()] += dp.Value
			}
		}
	}
	return byType, names
}

func TestActionHandlerForwardsTheActionCounterOnly(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	h, err := newActionHandler(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	require.NoError(t, err)

	// As the server's telemetry interceptor records: a handler tagged with
	// the operation and namespace, the action type given to Record.
	req := h.WithTags(metrics.OperationTag("RespondWorkflowTaskCompleted"), metrics.NamespaceTag("default"))
	metrics.ActionCounter.With(req).Record(1, metrics.ActionType("command_ScheduleActivityTask"))
	metrics.ActionCounter.With(req).Record(1, metrics.ActionType("command_ScheduleActivityTask"))
	metrics.ActionCounter.With(req).Record(1, metrics.ActionType("command_BatchMarkers"))
	metrics.ActionCounter.With(h).Record(3, metrics.ActionType("grpc_RecordActivityTaskHeartbeat"))
	// The action type given by WithTags is carried to the counter, and
	// a type given to Record wins over it.
	tagged := h.WithTags(metrics.ActionType("grpc_SignalWorkflowExecution")).WithTags(metrics.NamespaceTag("default"))
	tagged.Counter("action").Record(1)
	tagged.Counter("action").Record(1, metrics.ActionType("grpc_QueryWorkflow"))
	// A batch ("wide event") records its metrics as they come.
	batch := h.StartBatch("batch")
	batch.WithTags(metrics.ActionType("activity_retry")).Counter("action").Record(1)
	require.NoError(t, batch.Close())
	// An action without a type still counts.
	h.Counter("action").Record(1)
	// The server's own system workflows are nobody's: not counted.
	system := h.WithTags(metrics.OperationTag("StartWorkflowExecution"), metrics.NamespaceTag("temporal-system"))
	metrics.ActionCounter.With(system).Record(1, metrics.ActionType("grpc_StartWorkflowExecution"))
	h.Counter("action").Record(1, metrics.ActionType("command_StartTimer"), metrics.NamespaceTag("temporal-system"))

	// Everything else the server emits is dropped.
	metrics.ServiceRequests.With(req).Record(1)
	h.Counter("service_requests").Record(1, metrics.ActionType("grpc_StartWorkflowExecution"))
	h.Gauge("memory_allocated").Record(1)
	h.Timer("service_latency").Record(time.Second)
	h.Histogram("history_size", metrics.Bytes).Record(100)
	batch.Counter("service_errors").Record(1)
	h.Stop(nil)

	byType, names := actionsRecorded(t, reader)
	assert.Equal(t, map[string]int64{
		"command_ScheduleActivityTask":     2,
		"command_BatchMarkers":             1,
		"grpc_RecordActivityTaskHeartbeat": 3,
		"grpc_SignalWorkflowExecution":     1,
		"grpc_QueryWorkflow":               1,
		"activity_retry":                   1,
		"unknown":                          1,
	}, byType)
	assert.Equal(t, []string{ActionsMetric}, names, "no metric but the actions")
}

// The engine counts its billable actions on the MeterProvider it is given:
// a workflow started and a signal are two actions, by type.
func TestTheEngineCountsItsActions(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	e, err := Start(Options{
		DataDir: t.TempDir(), Namespace: "default", MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LogLevel: slog.LevelError,
	})
	require.NoError(t, err)
	defer e.Stop()
	tc, err := sdkclient.Dial(sdkclient.Options{HostPort: e.Addr(), Namespace: "default", ConnectionOptions: sdkclient.ConnectionOptions{TLS: e.ClientTLS()}})
	require.NoError(t, err)
	defer tc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before, _ := actionsRecorded(t, reader)

	// No worker: the workflow is only started, signalled and terminated.
	run, err := tc.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{ID: "counted", TaskQueue: "nobody"}, "Nothing")
	require.NoError(t, err)
	require.NoError(t, tc.SignalWorkflow(ctx, run.GetID(), run.GetRunID(), "poke", nil))
	require.NoError(t, tc.TerminateWorkflow(ctx, run.GetID(), run.GetRunID(), "done"))

	after, _ := actionsRecorded(t, reader)
	delta := map[string]int64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			delta[k] = d
		}
	}
	assert.Equal(t, map[string]int64{"grpc_StartWorkflowExecution": 1, "grpc_SignalWorkflowExecution": 1}, delta,
		"termination is no action")
}
