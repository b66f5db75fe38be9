package e2e

import (
	"context"
	"net/http"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SIGTERM with a wait in flight answers the call with "call again with the
// same arguments" (not a broken gRPC connection), durawait exits cleanly,
// and the same call after a restart attaches to the same wait.
func TestSIGTERMDrainsCallsInFlight(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	w.write("status.txt", "working")
	args := readFileWait(w.path("status.txt"), nil)

	inst := w.startServe(config)
	c := inst.client(t)
	answered := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		res, err := c.call(ctx, "wait_for", args, "")
		switch {
		case err != nil:
			answered <- "error: " + err.Error()
		case !res.IsError:
			answered <- "a result: " + resultText(res)
		default:
			answered <- resultText(res)
		}
	}()
	eventually(t, "the wait to sample the probe", func() bool { return w.calls("status.txt") >= 1 })

	require.NoError(t, inst.cmd.Process.Signal(syscall.SIGTERM))
	msg := <-answered
	assert.Contains(t, msg, "durawait is shutting down")
	assert.Contains(t, msg, "Call again with the same arguments")
	assert.NotContains(t, msg, "client connection is closing")
	<-inst.done
	assert.Equal(t, 0, inst.cmd.ProcessState.ExitCode(), inst.log.String())
	before := w.calls("status.txt")

	inst = w.startServe(config)
	c = inst.client(t)
	w.write("status.txt", "READY")
	res := c.waitFor(t, args)
	assert.Equal(t, "matched", res.Reason)
	after := w.calls("status.txt") - before
	assert.Greater(t, res.Samples, after, "the samples from before the restart count: the call attached to the same wait")
}

// Over stdio (durawait in one process, no daemon) a SIGTERM answers the
// call in flight the same way before the session ends.
func TestSIGTERMDrainsAStdioCall(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	w.write("status.txt", "working")
	c, proc := w.stdioClientNoDaemon(config)
	answered := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		res, err := c.call(ctx, "wait_for", readFileWait(w.path("status.txt"), nil), "")
		switch {
		case err != nil:
			answered <- "error: " + err.Error()
		default:
			answered <- resultText(res)
		}
	}()
	eventually(t, "the wait to sample the probe", func() bool { return w.calls("status.txt") >= 1 })
	require.NoError(t, proc.Signal(syscall.SIGTERM))
	msg := <-answered
	assert.Contains(t, msg, "Call again with the same arguments")
}

// With drain_delay_sec, a SIGTERM withdraws readiness first: /readyz
// answers 503 (draining) while the front still takes new calls, and only
// then are the calls in flight drained and the listener closed, so a load
// balancer's readiness probe sees the front leave before any call is cut.
func TestADrainDelayLetsALoadBalancerSeeTheFrontLeave(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfigWith("drain_delay_sec = 10", w.demoServer("demo"))
	w.write("status.txt", "working")
	w.write("other.txt", "hello")
	inst := w.startServe(config)
	c := inst.client(t)
	eventually(t, "/readyz 200", func() bool { status, _ := inst.readyz(t); return status == http.StatusOK })
	answered := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		res, err := c.call(ctx, "wait_for", readFileWait(w.path("status.txt"), nil), "")
		if err != nil {
			answered <- "error: " + err.Error()
			return
		}
		answered <- resultText(res)
	}()
	eventually(t, "the wait to sample the probe", func() bool { return w.calls("status.txt") >= 1 })

	require.NoError(t, inst.cmd.Process.Signal(syscall.SIGTERM))
	var failed []string
	eventually(t, "/readyz 503 draining", func() bool {
		var status int
		status, failed = inst.readyz(t)
		return status == http.StatusServiceUnavailable
	})
	assert.Equal(t, []string{"draining"}, failed)
	// Withdrawn, yet still taking calls: a new one is answered, and the
	// call in flight has not been cut.
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	res, err := inst.client(t).call(ctx, "read_file", map[string]any{"path": w.path("other.txt")}, "")
	require.NoError(t, err, "a new call while readiness is withdrawn")
	assert.False(t, res.IsError, resultText(res))
	select {
	case msg := <-answered:
		t.Fatalf("the call in flight was answered before the drain delay passed: %s", msg)
	default:
	}
	msg := <-answered
	assert.Contains(t, msg, "Call again with the same arguments")
	<-inst.done
	assert.Equal(t, 0, inst.cmd.ProcessState.ExitCode(), inst.log.String())
	assert.Contains(t, inst.log.String(), "readiness withdrawn; taking calls until the drain")
}
