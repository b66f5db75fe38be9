package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/durawait/durawait/workflows"
)

// A durawait stalled (SIGSTOP) past its waits' bounds and the loops'
// grace (LoopGrace) wakes with two things due at once: the engine's
// timeout of each loop's activity, and each loop's last sample and
// answer. Whichever comes first, a wait's run records what its caller was
// told: the loop's answer, never "no worker answered" beside a caller
// that got a timeout from the same host.
func TestAWaitWhoseBoundPassedInAStallRecordsWhatItsCallerWasTold(t *testing.T) {
	const waits, maxWait = 4, 2
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)
	stall := maxWait*time.Second + workflows.LoopGrace + 5*time.Second
	callCtx, cancel := context.WithTimeout(context.Background(), stall+testTimeout)
	defer cancel()

	answers := make([]waitResult, waits)
	errs := make([]error, waits)
	var wg sync.WaitGroup
	for i := range waits {
		file := fmt.Sprintf("job%d", i)
		w.write(file, fmt.Sprintf("pending %d", i))
		wg.Go(func() {
			res, err := c.call(callCtx, "wait_for", readFileWait(w.path(file), map[string]any{"max_wait_sec": maxWait}), "")
			if err == nil {
				err = json.Unmarshal([]byte(resultText(res)), &answers[i])
			}
			errs[i] = err
		})
	}
	eventually(t, "every wait sampling", func() bool {
		for i := range waits {
			if w.calls(fmt.Sprintf("job%d", i)) == 0 {
				return false
			}
		}
		return true
	})
	require.NoError(t, inst.cmd.Process.Signal(syscall.SIGSTOP))
	time.Sleep(stall) // the stall itself
	require.NoError(t, inst.cmd.Process.Signal(syscall.SIGCONT))
	wg.Wait()

	tc := temporalClient(t, w.owner().Engine)
	var closed []string
	eventually(t, "every wait's run closed", func() bool {
		resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: "WorkflowType = 'WaitFor' AND ExecutionStatus != 'Running'",
		})
		if err != nil || len(resp.Executions) < waits {
			return false
		}
		closed = closed[:0]
		for _, e := range resp.Executions {
			closed = append(closed, e.Execution.WorkflowId+" "+e.Execution.RunId)
		}
		return true
	})
	recorded := map[string]waitResult{}
	for _, e := range closed {
		var id, run string
		_, _ = fmt.Sscan(e, &id, &run)
		var res waitResult
		require.NoError(t, tc.GetWorkflow(context.Background(), id, run).Get(context.Background(), &res),
			"run %s of %s ended without a result", run, id)
		recorded[res.LastObservation] = res
	}
	for i := range waits {
		require.NoError(t, errs[i], "wait %d", i)
		assert.Equal(t, "timeout", answers[i].Reason, "wait %d", i)
		assert.Equal(t, answers[i], recorded[answers[i].LastObservation], "wait %d: its run recorded what its caller was told", i)
	}
}
