package e2e

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Waits on the same probe with different conditions share one probe call
// per tick on the worker (activities.SharedProber), each judging the output
// by its own condition; a wait on other arguments calls on its own.
func TestWaitForSharesOneProbeCallPerTick(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)
	w.write("pods", "web-1 pending")
	pods := w.path("pods")
	until := func(kind, pattern string) map[string]any {
		return readFileWait(pods, map[string]any{"until": map[string]any{kind: pattern}})
	}

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	start := func(token string, args map[string]any) <-chan outcome {
		done := make(chan outcome, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			res, err := c.call(ctx, "wait_for", args, token)
			done <- outcome{res, err}
		}()
		return done
	}
	sampled := func(token string, n int) {
		t.Helper()
		eventually(t, token+" sampled", func() bool { return len(c.progressOf(token)) >= n })
	}

	// A different probe: the same file, one more argument. It starts first
	// and ends with the others, and must not share their calls.
	otherArgs := until("matches", "READY")
	otherArgs["probe"].(map[string]any)["args"].(map[string]any)["caller"] = "other"
	other := start("other", otherArgs)
	// Three conditions on one probe, begun at different moments.
	ready := start("ready", until("matches", "READY"))
	sampled("ready", 2)
	failOrReady := start("fail-or-ready", until("matches", "FAIL|READY"))
	sampled("fail-or-ready", 2)
	notPending := start("not-pending", until("not_matches", "pending"))
	sampled("not-pending", 4)
	w.write("pods", "web-1 READY")

	results := map[string]waitResult{}
	for token, done := range map[string]<-chan outcome{
		"ready": ready, "fail-or-ready": failOrReady, "not-pending": notPending, "other": other,
	} {
		out := <-done
		require.NoError(t, out.err, token)
		require.False(t, out.res.IsError, "%s: %s", token, resultText(out.res))
		results[token] = decodeWait(t, out.res)
	}
	for token, cond := range map[string]string{
		"ready": "matches", "fail-or-ready": "matches", "not-pending": "not_matches", "other": "matches",
	} {
		assert.Equal(t, "matched", results[token].Reason, token)
		assert.Equal(t, cond, results[token].Condition, token)
		assert.Equal(t, "web-1 READY", results[token].LastObservation, token)
	}

	// The shared probe's calls: the first wait's samples, plus at most the
	// first sample of each wait that joined (taken at once, off the grid it
	// then joins), plus one for a tick whose loops woke more than the join
	// window apart on this busy machine. Unshared, it would be the sum.
	line, err := json.Marshal(map[string]any{"path": pods})
	require.NoError(t, err)
	shared := w.calls(string(line))
	first, second, third := results["ready"].Samples, results["fail-or-ready"].Samples, results["not-pending"].Samples
	t.Logf("shared probe: %d calls for %d + %d + %d samples; other probe: %d calls, %d samples",
		shared, first, second, third, w.calls(`"caller":"other"`), results["other"].Samples)
	assert.LessOrEqual(t, shared, first+3,
		"one call per tick for the three waits: %d calls, samples %d, %d, %d", shared, first, second, third)
	assert.GreaterOrEqual(t, shared, first, "the first wait's every sample is a call")
	assert.Less(t, shared, first+second+third-3, "unshared it would be %d", first+second+third)
	assert.Equal(t, w.calls(`"caller":"other"`), results["other"].Samples,
		"the wait on other arguments made each of its samples' calls, and no others")
}
