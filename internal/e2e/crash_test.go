package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A wait outlives a kill -9 of durawait: after a restart, the same call
// attaches to it and gets the result, with samples from before and after.
func TestWaitSurvivesKill9OverHTTP(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	first := w.startServe(config)
	w.write("deploy", "rolling out")
	args := readFileWait(w.path("deploy"), nil)

	start := time.Now()
	go func() {
		// This caller's connection dies with the server.
		_, _ = first.client(t).call(context.Background(), "wait_for", args, "")
	}()
	eventually(t, "samples before the crash", func() bool { return w.calls("deploy") >= 3 })
	first.kill9()
	before := w.calls("deploy")

	second := w.startServe(config)
	c := second.client(t)
	done := make(chan waitResult, 1)
	go func() { done <- c.waitFor(t, args) }()
	eventually(t, "samples after the restart", func() bool { return w.calls("deploy") >= before+2 })
	w.write("deploy", "READY")
	res := <-done

	total := w.calls("deploy")
	assert.Equal(t, "matched", res.Reason)
	assert.Equal(t, "READY", res.LastObservation)
	after := total - before
	assert.Greater(t, res.Samples, after, "samples from before the crash count too")
	// The samples before the restart are counted as the schedule took
	// them (docs/wait_for.md): the restart's gap counts as sampled.
	assert.LessOrEqual(t, res.Samples, scheduledSamples(res.ElapsedSec, 1), "at most what the schedule takes")
	assert.GreaterOrEqual(t, res.ElapsedSec, time.Since(start).Seconds()-2, "elapsed counts from the first call, before the crash")
}

// Over stdio with --no-daemon the stdio process is the whole of durawait,
// so its kill -9 is a crash of the engine.
func TestWaitSurvivesKill9OverStdio(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	w.write("job", "queued")
	args := readFileWait(w.path("job"), nil)

	c, proc := w.stdioClientNoDaemon(config)
	go func() { _, _ = c.call(context.Background(), "wait_for", args, "") }()
	eventually(t, "samples before the crash", func() bool { return w.calls("job") >= 3 })
	require.NoError(t, proc.Signal(syscall.SIGKILL))
	_, _ = proc.Wait()
	before := w.calls("job")

	// The client restarts its server, as stdio clients do, and calls again.
	c2, _ := w.stdioClientNoDaemon(config)
	done := make(chan waitResult, 1)
	go func() { done <- c2.waitFor(t, args) }()
	eventually(t, "samples after the restart", func() bool { return w.calls("job") >= before+2 })
	w.write("job", "READY")
	res := <-done

	total := w.calls("job")
	assert.Equal(t, "matched", res.Reason)
	assert.Greater(t, res.Samples, total-before, "samples from before the crash count too")
	assert.LessOrEqual(t, res.Samples, scheduledSamples(res.ElapsedSec, 1), "at most what the schedule takes")
}

// scheduledSamples is how many samples a wait's schedule takes in elapsed
// seconds at pollSec: one at once, then one per poll.
func scheduledSamples(elapsed float64, pollSec int) int {
	return int(elapsed)/pollSec + 1
}

// A downstream server that dies is restarted; calls during the outage fail
// with a message naming it, and a running wait carries on.
func TestDownstreamOutageIsSurvived(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)
	w.write("svc", "down for maintenance")

	done := make(chan waitResult, 1)
	go func() { done <- c.waitFor(t, readFileWait(w.path("svc"), nil)) }()
	eventually(t, "a sample", func() bool { return w.calls("svc") >= 1 })

	// Hold the server down and kill it.
	w.write("down", "")
	probePID := childPID(t, inst.cmd.Process.Pid, "demoprobe")
	require.NoError(t, syscall.Kill(probePID, syscall.SIGKILL))

	eventually(t, "calls to fail naming the server", func() bool {
		res, err := c.call(context.Background(), "read_file", map[string]any{"path": w.path("svc")}, "")
		return err == nil && res.IsError && strings.Contains(resultText(res), `downstream MCP server "demo" is unavailable`)
	})
	callsDuringOutage := w.calls("svc")

	// Let it come back; the wait sees the file change.
	require.NoError(t, os.Remove(w.path("down")))
	w.write("svc", "READY")
	res := <-done
	assert.Equal(t, "matched", res.Reason)
	assert.Equal(t, "READY", res.LastObservation)
	assert.Greater(t, w.calls("svc"), callsDuringOutage)
}

// childPID finds the process named name among pid's descendants.
func childPID(t *testing.T, pid int, name string) int {
	t.Helper()
	var found int
	eventually(t, name+" process", func() bool {
		out, err := exec.Command("pgrep", "-f", name).Output()
		if err != nil {
			return false
		}
		for _, f := range strings.Fields(string(out)) {
			p := atoi(f)
			if isDescendant(p, pid) {
				found = p
				return true
			}
		}
		return false
	})
	return found
}

func isDescendant(p, ancestor int) bool {
	for i := 0; i < 10 && p > 1; i++ {
		stat, err := os.ReadFile("/proc/" + itoa(p) + "/stat")
		if err != nil {
			return false
		}
		// pid (comm) state ppid ...
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		p = atoi(fields[1])
		if p == ancestor {
			return true
		}
	}
	return false
}

// `durawait front` alone (no worker in its process) serves the same waits
// through the engine of a running `durawait serve`: its answers come from
// Temporal, not from an in-process feed.
func TestFrontRoleAgainstARunningEngine(t *testing.T) {
	w := newWorkspace(t)
	config := w.writeConfig(w.demoServer("demo"))
	w.startServe(config) // the engine and the worker
	engine := w.owner().Engine

	front := &instance{t: t, http: freeAddr(t), log: &syncBuffer{}, done: make(chan struct{})}
	front.cmd = exec.Command(bin.durawait, append([]string{"front", "--config", config, "--temporal", engine, "--http", front.http}, engineFlags(engine)...)...)
	front.cmd.Stdout, front.cmd.Stderr = front.log, front.log
	require.NoError(t, front.cmd.Start())
	go func() { _ = front.cmd.Wait(); close(front.done) }()
	t.Cleanup(func() {
		front.kill9()
		if t.Failed() {
			t.Logf("front log:\n%s", front.log.String())
		}
	})
	eventually(t, "the front's /healthz", func() bool {
		resp, err := http.Get("http://" + front.http + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	w.write("f", "pending")
	c := front.client(t)
	done := make(chan waitResult, 1)
	go func() { done <- c.waitFor(t, readFileWait(w.path("f"), nil)) }()
	eventually(t, "samples", func() bool { return w.calls("f") >= 2 })
	w.write("f", "READY")
	res := <-done
	assert.Equal(t, "matched", res.Reason)
	assert.Equal(t, "READY", res.LastObservation)
	assert.Equal(t, w.calls("f"), res.Samples)

	// Its config names the demo server, yet the front starts none: the
	// worker runs it.
	children, _ := exec.Command("pgrep", "-P", itoa(front.cmd.Process.Pid)).Output()
	assert.Empty(t, strings.TrimSpace(string(children)), "the front has no child process")
}
