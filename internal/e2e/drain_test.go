package e2e

import (
	"context"
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
