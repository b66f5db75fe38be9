package engine

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// A port taken between its pick and the engine's bind (another process
// took it) makes the engine start again on other ports, not fail, whichever
// of its services was to listen there. (The Temporal server reports a taken
// port of the history, matching and worker services only by a fatal log
// line; the crash soak saw durawait die on a taken worker port.)
func TestEngineStartsAgainWhenAPickedPortIsTaken(t *testing.T) {
	for _, tc := range []struct {
		service   string
		pick      int // the pick that returns the taken port
		fixedPort bool
	}{
		{service: "history", pick: 2}, // the first internal port of the first attempt
		{service: "matching", pick: 3},
		{service: "worker", pick: 4},
		// With its frontend port configured, a failed start may have left
		// that port taken: the start fails, naming the cause, and the
		// process's supervisor starts durawait again.
		{service: "history, frontend port fixed", pick: 1, fixedPort: true},
		{service: "worker, frontend port fixed", pick: 3, fixedPort: true},
	} {
		t.Run(tc.service, func(t *testing.T) {
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer taken.Close()
			picks := 0
			pick := func(ip string) (int, error) {
				picks++
				if picks == tc.pick {
					return taken.Addr().(*net.TCPAddr).Port, nil
				}
				return freePort(ip)
			}
			opts := Options{
				DataDir: t.TempDir(), Namespace: "default", pickPort: pick,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LogLevel: slog.LevelError,
			}
			if tc.fixedPort {
				opts.Port, err = freePort("127.0.0.1")
				require.NoError(t, err)
			}
			e, err := Start(opts)
			if tc.fixedPort {
				require.Error(t, err)
				assert.Contains(t, err.Error(), fmt.Sprintf("%d: bind: address already in use", taken.Addr().(*net.TCPAddr).Port))
				return
			}
			require.NoError(t, err)
			defer e.Stop()
			assert.GreaterOrEqual(t, picks, 8, "a second attempt picked new ports")
			c, err := net.Dial("tcp", e.Addr())
			require.NoError(t, err, "the frontend listens")
			c.Close()
		})
	}
}

// Each internal port is picked distinct from the others and from the
// frontend's: two picks of one free port are not two free ports.
func TestEnginePicksDistinctPorts(t *testing.T) {
	frontend, err := freePort("127.0.0.1")
	require.NoError(t, err)
	var picked []int
	pick := func(ip string) (int, error) {
		if len(picked) < 3 {
			picked = append(picked, frontend) // the frontend's port, thrice
			return frontend, nil
		}
		p, err := freePort(ip)
		picked = append(picked, p)
		return p, err
	}
	e, err := Start(Options{
		DataDir: t.TempDir(), Namespace: "default", Port: frontend, pickPort: pick,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LogLevel: slog.LevelError,
	})
	require.NoError(t, err)
	defer e.Stop()
	assert.Len(t, picked, 6, "the three repeats were picked again")
	assert.Equal(t, fmt.Sprintf("127.0.0.1:%d", frontend), e.Addr())
}

// The engine's span exporters are durawait's: the server's stock provider,
// which reads the OTEL_* environment and sets the process-wide OTel error
// handler, is never called. It refuses OTEL_TRACES_EXPORTER=console.
func TestTheStockSpanExporterProviderIsNotCalled(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	var handled []error
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { handled = append(handled, err) }))
	exp := tracetest.NewInMemoryExporter()
	e, err := Start(Options{
		DataDir: t.TempDir(), Namespace: "default", SpanExporter: exp,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LogLevel: slog.LevelError,
	})
	require.NoError(t, err, "the stock provider refuses OTEL_TRACES_EXPORTER=console")
	defer e.Stop()
	otel.Handle(errors.New("mine"))
	assert.Equal(t, []error{errors.New("mine")}, handled, "the error handler set before the start is still the process's")
}

// A fatal line of the Temporal server while it is built ends its start
// with an error naming it; otherwise (its start
// hooks run on goroutines of their own, and then it runs) it is logged as
// an error, as before.
func TestAFatalLineEndsOnlyTheBuild(t *testing.T) {
	var building atomic.Bool
	var level slog.LevelVar
	l := newTemporalLogger(slog.New(slog.NewTextHandler(io.Discard, nil)), &level, &building)
	assert.NotPanics(t, func() { l.Fatal("Failed to serve on worker listener") })
	building.Store(true)
	defer func() {
		fatal, ok := recover().(*fatalError)
		require.True(t, ok, "a *fatalError")
		assert.Equal(t, "temporal server: Failed to start gRPC listener error=bind: address already in use service=worker", fatal.Error())
		assert.True(t, addressInUse(fatal))
	}()
	bind := fmt.Errorf("bind: %w", syscall.EADDRINUSE)
	l.Fatal("Failed to start gRPC listener", tag.Error(bind), tag.Service("worker"))
}

// The engine's dynamic configuration is read as the server reads it: a
// workflow task's later attempts keep the workflow's own task timeout,
// not one grown by the engine's backoff (whose first step is 5 s; a cap
// under it turns the growth off), and the other settings convert: the
// queues' workers and checkpoints sized for one SQLite connection.
func TestTheEnginesDynamicConfigIsReadAsSet(t *testing.T) {
	c := dynamicconfig.NewCollection(engineDynamicConfig(Options{WorkflowCacheSize: 300}), log.NewNoopLogger())
	retryMax := dynamicconfig.WorkflowTaskRetryMaxInterval.Get(c)()
	assert.Positive(t, retryMax, "0 would mean no cap at all")
	assert.Less(t, retryMax, 5*time.Second, "the engine's first backoff step: a cap under it turns the growth off")
	assert.Equal(t, engineHistoryCacheSize, dynamicconfig.HistoryCacheHostLevelMaxSize.Get(c)())
	assert.Equal(t, engineQueuePollRPS, dynamicconfig.TimerProcessorMaxPollRPS.Get(c)())
	assert.Equal(t, 300, dynamicconfig.WorkerStickyCacheSize.Get(c)())
	assert.Equal(t, engineQueueWorkers, dynamicconfig.TimerProcessorSchedulerWorkerCount.Get(c)())
	assert.Equal(t, engineQueueWorkers, dynamicconfig.TransferProcessorSchedulerWorkerCount.Get(c)())
	assert.Equal(t, engineQueueCheckpoint, dynamicconfig.TimerProcessorUpdateAckInterval.Get(c)())
	assert.Equal(t, engineQueueCheckpoint, dynamicconfig.VisibilityProcessorUpdateAckInterval.Get(c)())
}
