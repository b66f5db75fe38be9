package e2e

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/durawait/durawait/internal/engine"
	"github.com/durawait/durawait/workflows"
)

// The frequent-polling pattern holds with the search attributes upserted:
// a wait_for's history has the same number of events for 10, 100 and 300
// samples (on the real engine; a stand-in takes the probe loop's activity
// on its host's queue).
func TestWaitForHistoryIsTheSameFor10_100And300Samples(t *testing.T) {
	e, err := engine.Start(engine.Options{DataDir: t.TempDir(), Namespace: "default", SearchAttributes: workflows.SearchAttributes(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LogLevel: slog.LevelError})
	require.NoError(t, err)
	defer e.Stop()
	tc, err := sdkclient.Dial(sdkclient.Options{HostPort: e.Addr(), Namespace: "default", ConnectionOptions: sdkclient.ConnectionOptions{TLS: e.ClientTLS()}})
	require.NoError(t, err)
	defer tc.Close()
	w := sdkworker.New(tc, "history", sdkworker.Options{})
	w.RegisterWorkflowWithOptions(workflows.WaitFor, workflow.RegisterOptions{Name: workflows.WaitForWorkflowName})
	w.RegisterActivityWithOptions(func(context.Context) (string, error) { return "h", nil },
		activity.RegisterOptions{Name: workflows.PickHostActivityName})
	require.NoError(t, w.Start())
	defer w.Stop()
	host := sdkworker.New(tc, workflows.HostQueue("history", "h"), sdkworker.Options{})
	host.RegisterActivityWithOptions(func(ctx context.Context, in workflows.PollInput) (workflows.WaitForResult, error) {
		var samples int
		_ = jsonNumber(in.Spec.Probe.Args, &samples)
		return workflows.WaitForResult{Reason: workflows.WaitReasonMatched, Condition: workflows.ConditionMatches,
			LastObservation: "Running", Samples: samples, EffectiveMaxWaitSec: in.Spec.MaxWaitSec}, nil
	}, activity.RegisterOptions{Name: workflows.PollProbeActivityName})
	require.NoError(t, host.Start())
	defer host.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	counts := map[int]int{}
	for _, samples := range []int{10, 100, 300} {
		spec := workflows.WaitForSpec{Probe: workflows.Probe{Tool: "demo.read_file", Args: []byte(`{"n":` + itoa(samples) + `}`)},
			Until: workflows.Until{Kind: workflows.ConditionMatches, Pattern: "Running"}, PollSec: 1, MaxWaitSec: 300}
		// Started as a front starts it: already running (no upsert of its own).
		run, err := tc.ExecuteWorkflow(ctx, sdkclient.StartWorkflowOptions{ID: spec.WorkflowID(""), TaskQueue: "history",
			TypedSearchAttributes: temporal.NewSearchAttributes(workflows.StartedRunning())},
			workflows.WaitForWorkflowName, workflows.WaitForInput{Spec: spec})
		require.NoError(t, err)
		var res workflows.WaitForResult
		require.NoError(t, run.Get(ctx, &res))
		require.Equal(t, samples, res.Samples)
		it := tc.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var types []string
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			counts[samples]++
			types = append(types, strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_"))
		}
		if samples == 10 {
			t.Logf("events of a wait_for: %s", strings.Join(types, " "))
		}
	}
	t.Logf("history events per wait_for: %v", counts)
	assert.Equal(t, counts[10], counts[100], "events: %v", counts)
	assert.Equal(t, counts[10], counts[300], "events: %v", counts)
}

// jsonNumber reads {"n": N} from args.
func jsonNumber(args []byte, n *int) error {
	var v struct {
		N int `json:"n"`
	}
	err := json.Unmarshal(args, &v)
	*n = v.N
	return err
}
