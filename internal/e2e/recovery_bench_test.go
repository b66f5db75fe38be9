package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/durawait/durawait/workflows"
)

// BenchmarkRecovery measures issue 22's recovery targets with the capacity
// harness's waits (each its own streamable-HTTP session and probe file,
// poll_sec 2, max_wait_sec 300), per size of DURAWAIT_BENCH_WAITS (default
// 1000), at durawait's default lease (6 s; DURAWAIT_BENCH_LEASE_SEC to
// change it):
//
//   - restart: one `durawait serve --no-daemon` holds N waits and is killed
//     with -9, then started again on its data dir. The figure is, for every
//     wait, the time from the restart (the new process launched) to the
//     wait's first sample after it.
//   - takeover: `durawait serve` (the engine and a worker) and a second
//     worker (`durawait worker`) on its engine, and a `durawait front`
//     through which the N waits are called, so each worker hosts some. The
//     second worker is killed with -9; the figure is, for every wait it
//     hosted, the time from the kill to the wait's first sample after it
//     (on the survivor, which adopts its host once its lease lapses).
//
// Either way every wait's file then flips to its own match and every call
// (made again after the restart: the first calls died with the process)
// must answer matched with its own value: no wait lost or answered wrong.
// The figures are reported as p50/p99/max metrics and logged.
func BenchmarkRecovery(b *testing.B) {
	limit := raiseOpenFiles(b)
	for _, n := range capacitySizes(b) {
		require.Greater(b, limit, uint64(n)+512, "RLIMIT_NOFILE hard limit %d is too low for %d sessions", limit, n)
		b.Run("restart/waits="+itoa(n), func(b *testing.B) {
			for range b.N {
				runRestartRecovery(b, n)
			}
		})
		b.Run("takeover/waits="+itoa(n), func(b *testing.B) {
			for range b.N {
				runTakeover(b, n)
			}
		})
	}
}

// recoveryCalls calls every wait once from its own session; the returned
// function waits for the calls and gives their outcomes.
func recoveryCalls(w *workspace, clients []*mcpClient) func() []waitCall {
	calls := make([]waitCall, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), capCallLimit)
			defer cancel()
			calls[i].res, calls[i].err = c.call(ctx, "wait_for", capWaitArgs(w, i), "")
			calls[i].returned = time.Now()
		})
	}
	return func() []waitCall {
		wg.Wait()
		return calls
	}
}

// awaitSampling waits until every wait of want (by index; nil: all) has a
// sample after t, and returns the time from t to each one's first.
func awaitSampling(b *testing.B, log *sampleLog, n int, want map[int]bool, t time.Time, bound time.Duration) []time.Duration {
	deadline := time.Now().Add(bound)
	for {
		log.mu.Lock()
		var after []time.Duration
		missing := 0
		for i := range n {
			if want != nil && !want[i] {
				continue
			}
			found := false
			for _, at := range log.times[i] {
				if at.After(t) {
					after = append(after, at.Sub(t))
					found = true
					break
				}
			}
			if !found {
				missing++
			}
		}
		log.mu.Unlock()
		if missing == 0 {
			return after
		}
		require.True(b, time.Now().Before(deadline), "%d waits not sampling again %v after the kill", missing, bound)
		time.Sleep(100 * time.Millisecond)
	}
}

// recoveryConfig is a config with the demo probe server at durawait's
// own lease (see benchLease).
func recoveryConfig(b *testing.B, w *workspace, name, dataDir string) string {
	return benchLease(b, w.writeConfigAt(name, dataDir, "", w.demoServer("demo")))
}

// spread is a figure's p50 / p99 / max, for a log line.
func spread(samples []time.Duration) string {
	if len(samples) == 0 {
		return "none"
	}
	p := func(q float64) time.Duration { return percentile(samples, q).Round(time.Millisecond) }
	return fmt.Sprintf("p50 %v / p99 %v / max %v", p(0.5), p(0.99), p(1))
}

// runRestartRecovery is the restart case of BenchmarkRecovery.
func runRestartRecovery(b *testing.B, n int) {
	w := newWorkspace(b)
	config := recoveryConfig(b, w, "durawait.toml", w.path("data"))
	flags := []string{"--no-daemon", "--log-level", "info"}
	addr := freeAddr(b)
	inst := w.startServeWith(config, addr, w.env(), flags...)
	prepareFlip(b, w, n)
	log := startSampleLog(w.path("calls.log"), n)
	defer log.stop()
	first := recoveryCalls(w, capacitySessions(b, inst, n))
	awaitSampling(b, log, n, nil, time.Time{}, capCallLimit)
	time.Sleep(capSettle)

	inst.kill9()
	first()
	restarted := time.Now()
	inst = w.startServeWith(config, addr, w.env(), flags...)
	ready := time.Since(restarted)
	resumed := awaitSampling(b, log, n, nil, restarted, 5*time.Minute)

	again := recoveryCalls(w, capacitySessions(b, inst, n))
	time.Sleep(capSettle) // every call attached
	flipped := flip(b, w)
	row := capacityRow{waits: n}
	row.judge(again(), flipped)
	report(b, "resampled", resumed)
	b.Logf("restart of durawait serve holding %d waits: ready after %v; every wait sampling again after %s; flip -> result %s",
		n, ready.Round(time.Millisecond), spread(resumed), spread(row.flip))
	row.check(b)
}

// runTakeover is the takeover case of BenchmarkRecovery.
func runTakeover(b *testing.B, n int) {
	w := newWorkspace(b)
	flags := []string{"--log-level", "info"}
	owner := w.startServeWith(recoveryConfig(b, w, "durawait.toml", w.path("data")), freeAddr(b), w.env(), flags...)
	engine := w.owner().Engine
	flags = append(flags, engineFlags(engine)...)
	second := w.startRoleWith("worker", recoveryConfig(b, w, "worker.toml", w.path("worker-data")),
		append([]string{"--temporal", engine}, flags...), w.env())
	front := w.startRoleWith("front", w.writeConfigAt("front.toml", w.path("front-data"), ""),
		append([]string{"--temporal", engine}, flags...), w.env())
	frontClient := front.client(b)
	eventually(b, "the front to list the workers' tools", func() bool { return listedTools(b, frontClient)["read_file"] != "" })
	victimHost, survivorHost := ownHost(b, second), ownHost(b, owner)
	require.NotEqual(b, victimHost, survivorHost)

	prepareFlip(b, w, n)
	log := startSampleLog(w.path("calls.log"), n)
	defer log.stop()
	calls := recoveryCalls(w, capacitySessions(b, front, n))
	awaitSampling(b, log, n, nil, time.Time{}, capCallLimit)
	time.Sleep(capSettle)

	tc := temporalClient(b, engine)
	victims := hostedWaits(b, tc, victimHost, n)
	require.NotEmpty(b, victims, "the second worker hosts no wait")
	second.kill9()
	killed := time.Now()
	takenOver := awaitSampling(b, log, n, victims, killed, 5*time.Minute)

	flipped := flip(b, w)
	row := capacityRow{waits: n}
	row.judge(calls(), flipped)
	report(b, "takeover", takenOver)
	b.Logf("kill -9 of one of two workers, %d of %d waits on it: every one sampling again on the other after %s; flip -> result %s",
		len(victims), n, spread(takenOver), spread(row.flip))
	row.check(b)
}

// hostedWaits are the waits (by index) whose loop runs on host: the
// running WaitFor workflows with that DurawaitHost, each mapped to its
// index by its probe file in its input.
func hostedWaits(b *testing.B, tc client.Client, host string, n int) map[int]bool {
	ctx := context.Background()
	query := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND %s = '%s'", workflows.WaitForWorkflowName, workflows.SearchAttrHost, host)
	var ids []string
	var token []byte
	for {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 1000, NextPageToken: token})
		require.NoError(b, err)
		for _, e := range resp.Executions {
			ids = append(ids, e.Execution.WorkflowId)
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	hosted := map[int]bool{}
	for _, id := range ids {
		it := tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		require.True(b, it.HasNext(), id)
		ev, err := it.Next()
		require.NoError(b, err)
		for _, p := range ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads() {
			if _, rest, ok := strings.Cut(string(p.GetData()), "/cur/w-"); ok {
				digits, _, _ := strings.Cut(rest, `"`)
				if i, err := strconv.Atoi(digits); err == nil && i < n {
					hosted[i] = true
				}
			}
		}
	}
	return hosted
}
