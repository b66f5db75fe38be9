package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkEventPostLatency: a wait_for_event waiting (its latch holds
// it), then post_event from another client; the time from the post's call
// to the wait's answer.
func BenchmarkEventPostLatency(b *testing.B) {
	eventLatency(b, "event", func(b *testing.B, inst *instance, poster *mcpClient, name string) {
		poster.postEvent(b, map[string]any{"name": name, "payload": map[string]any{"n": 1}})
	})
}

// BenchmarkEventHookLatency: as BenchmarkEventPostLatency, the post a
// GitHub-signed POST /hooks/{name}.
func BenchmarkEventHookLatency(b *testing.B) {
	eventLatency(b, "hook", func(b *testing.B, inst *instance, _ *mcpClient, name string) {
		body := []byte(`{"workflow_run":{"conclusion":"success"}}`)
		req, err := http.NewRequest(http.MethodPost, "http://"+inst.http+"/hooks/"+name, bytes.NewReader(body))
		require.NoError(b, err)
		req.Header.Set("X-Hub-Signature-256", githubSignature(githubSecret, body))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(b, err)
		resp.Body.Close()
		require.Equal(b, http.StatusOK, resp.StatusCode)
	})
}

// eventSamplesPerOp is how many posts one iteration of an event benchmark
// times: make bench-check's 10 iterations are 100 posts, whose p99 is the
// 99th of 100 rather than the slowest of 10.
const eventSamplesPerOp = 10

// eventLatency measures post → answer for eventSamplesPerOp × b.N waits,
// each on an event of its own (each a GitHub hook), posted by post once the
// wait's subscription started the event's latch.
func eventLatency(b *testing.B, metric string, post func(b *testing.B, inst *instance, poster *mcpClient, name string)) {
	w := newWorkspace(b)
	n := b.N * eventSamplesPerOp
	var hooks strings.Builder
	for i := range n {
		fmt.Fprintf(&hooks, "[[hook]]\nname = \"bench-%d\"\nscheme = \"github\"\nsecret = %q\n\n", i, githubSecret)
	}
	w.write("bench-hooks.toml", hooks.String())
	require.NoError(b, os.Chmod(w.path("bench-hooks.toml"), 0o600))
	inst := w.startServe(w.writeConfigWith(fmt.Sprintf("[events]\nhooks_file = %q", w.path("bench-hooks.toml"))))
	waiter, poster := inst.client(b), inst.client(b)
	tc := temporalClient(b, w.owner().Engine)
	var samples []time.Duration
	for i := range n {
		name := "bench-" + itoa(i)
		done := make(chan time.Time, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			got, err := waiter.tryWaitEvent(ctx, map[string]any{"name": name})
			if err != nil || got.Reason != "posted" || got.Latched {
				b.Errorf("wait_for_event: %v %+v", err, got)
			}
			done <- time.Now()
		}()
		// The clock is for a wait in place: its subscription started the
		// latch, whose first workflow task (taking it) is done.
		eventually(b, "the latch to take the wait's subscription", func() bool {
			desc, err := tc.DescribeWorkflowExecution(context.Background(), "event/"+name, "")
			return err == nil && desc.GetPendingWorkflowTask() == nil && desc.GetWorkflowExecutionInfo().GetHistoryLength() >= 5
		})
		start := time.Now()
		post(b, inst, poster, name)
		samples = append(samples, (<-done).Sub(start))
	}
	b.Logf("post -> answer, in order: %v", samples)
	report(b, metric, samples)
}
