package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/workflows"
)

// largestSixfold is the issue's pathological pattern shape ([xy]x{n} six
// times, then z) with n as large as the instruction limit allows.
func largestSixfold(t *testing.T) string {
	t.Helper()
	for n := 999; n > 0; n-- {
		p := strings.Repeat(fmt.Sprintf("[xy]x{%d}", n), 6) + "z"
		size, err := workflows.PatternInstructions(p)
		require.NoError(t, err)
		if size <= workflows.MaxPatternInstructions {
			return p
		}
	}
	t.Fatal("no pattern fits the limit")
	return ""
}

// The regex bound (issue 8): the costliest allowed pattern against the
// largest allowed output cannot stretch a wait past max_wait_sec + 1 s, and
// the issue's own pattern is refused up front, naming the field.
func TestWaitForRegexCostIsBounded(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)

	bigProbe := map[string]any{"tool": "big", "args": map[string]any{"kib": 256}}
	issue := strings.Repeat("[xy]x{999}", 6) + "z"
	res := c.waitForRaw(t, map[string]any{"probe": bigProbe, "until": map[string]any{"matches": issue}, "poll_sec": 1, "max_wait_sec": 3})
	require.True(t, res.IsError)
	assert.Contains(t, resultText(res), fmt.Sprintf("until.matches: is too costly to match: it compiles to 6003 instructions, over the limit of %d", workflows.MaxPatternInstructions))
	assert.Equal(t, 0, w.calls(`"kib"`), "nothing was probed")

	// The largest pattern that compiles within the limit, over 256 KiB of
	// output, costs more than the wait's bound: the match is stopped on the
	// bound and the wait times out. The exact instant (the bound plus the
	// final sample's allowance, never more) is proven on a fake clock in
	// activities (TestPollProbeCostlyAllowedPatternCannotStretchTheWait);
	// timing claims are no assertion here. The real parts show the outcome.
	const maxWait = 3
	got := c.waitFor(t, map[string]any{"probe": bigProbe, "until": map[string]any{"matches": largestSixfold(t)}, "poll_sec": 1, "max_wait_sec": maxWait})
	assert.Equal(t, "timeout", got.Reason)
	assert.GreaterOrEqual(t, got.Samples, 1)
	assert.GreaterOrEqual(t, got.ElapsedSec, float64(maxWait), "the wait ran to its bound")
}

// Every argument has a size limit, refused up front with the field named,
// instead of a raw gRPC "larger than max" error.
func TestArgumentSizeLimits(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)

	huge := strings.Repeat("a", 3<<20)
	res := c.waitForRaw(t, map[string]any{
		"probe": map[string]any{"tool": "read_file", "args": map[string]any{"path": "/x", "pad": huge}},
		"until": map[string]any{"matches": "x"},
	})
	require.True(t, res.IsError)
	assert.Contains(t, resultText(res), fmt.Sprintf("probe.args: must be at most %d bytes of JSON", workflows.MaxProbeArgsBytes))
	assert.NotContains(t, resultText(res), "larger than max")

	res = c.waitForRaw(t, readFileWait("/x", map[string]any{"until": map[string]any{"matches": strings.Repeat("a", workflows.MaxPatternBytes+1)}}))
	require.True(t, res.IsError)
	assert.Contains(t, resultText(res), fmt.Sprintf("until.matches: must be at most %d bytes", workflows.MaxPatternBytes))
	assert.Equal(t, 0, w.calls(""), "nothing was probed")
}

// Probe arguments are checked against the probe tool's inputSchema.
func TestProbeArgsAreCheckedAgainstTheSchema(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)

	res := c.waitForRaw(t, map[string]any{
		"probe": map[string]any{"tool": "read_file", "args": map[string]any{"path": 123}},
		"until": map[string]any{"matches": "x"}, "max_wait_sec": 5,
	})
	require.True(t, res.IsError)
	assert.Contains(t, resultText(res), `probe.args.path: got number, want string (rule "type" of demo.read_file's inputSchema)`)
	assert.Equal(t, 0, w.calls(""), "nothing was probed")
}

// wait_for is annotated read-only, so it probes a destructive tool only when
// the server's config allows it.
func TestProbePolicyRefusesDestructiveTools(t *testing.T) {
	w := newWorkspace(t)
	w.write("victim", "precious")
	deleteProbe := map[string]any{
		"probe": map[string]any{"tool": "delete_file", "args": map[string]any{"path": w.path("victim")}},
		"until": map[string]any{"matches": "deleted"}, "poll_sec": 1, "max_wait_sec": 10,
	}

	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)
	res := c.waitForRaw(t, deleteProbe)
	require.True(t, res.IsError)
	assert.Contains(t, resultText(res), `probe.tool: demo.delete_file is annotated destructiveHint: true and not readOnlyHint: true`)
	assert.Contains(t, resultText(res), `add probe_tools = ["delete_file"]`)
	assert.Equal(t, 0, w.calls("victim"), "the destructive tool was never called")
	assert.Equal(t, "precious", readFile(w.path("victim")))
	inst.kill9()

	allowed := w.demoServer("demo")
	allowed.probeTools = []string{"delete_file"}
	inst = w.startServe(w.writeConfig(allowed))
	c = inst.client(t)
	got := c.waitFor(t, deleteProbe)
	assert.Equal(t, "matched", got.Reason)
	assert.GreaterOrEqual(t, w.calls("victim"), 1)
	_, err := os.Stat(w.path("victim"))
	assert.True(t, os.IsNotExist(err), "allowed by config, the probe ran")
}

// A client that sends its headers and then dribbles the body is cut off by
// the read timeout instead of holding the connection for minutes.
func TestSlowRequestBodyIsCutOff(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfigWith("http_read_timeout_sec = 2", w.demoServer("demo")))

	elapsed := dribble(t, inst.http, fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{", inst.http),
		200*time.Millisecond, func(int) string { return " " })
	assert.Less(t, elapsed, 10*time.Second, "cut off near the 2 s read timeout, not held open")
	assert.GreaterOrEqual(t, elapsed, time.Second, "a dribbling client is given its read timeout")

	// The read timeout bounds reading requests, not answering them: a wait
	// twice as long as the timeout still streams its answer.
	c := inst.client(t)
	got := c.waitFor(t, readFileWait(w.path("never"), map[string]any{"max_wait_sec": 4}))
	assert.Equal(t, "timeout", got.Reason)
	assert.GreaterOrEqual(t, got.ElapsedSec, 4.0)
}

// A client that dribbles its request headers is cut off by the header
// timeout, 10 s (docs/limits.md), though the read timeout is the default's
// longer 30 s: a connection that never finishes its headers is not held for
// the read timeout.
func TestSlowRequestHeadersAreCutOff(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))

	elapsed := dribble(t, inst.http, fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\n", inst.http),
		500*time.Millisecond, func(i int) string { return fmt.Sprintf("X-Dribble-%d: x\r\n", i) })
	assert.Less(t, elapsed, 20*time.Second, "cut off near the 10 s header timeout, not the 30 s read timeout")
	assert.GreaterOrEqual(t, elapsed, 5*time.Second, "a client is given its header timeout")
}

// dribble sends head to addr, then the i-th piece every pause, and returns
// how long the server took to answer or close the connection (reading
// ends either way).
func dribble(t *testing.T, addr, head string, pause time.Duration, piece func(i int) string) time.Duration {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	start := time.Now()
	_, err = io.WriteString(conn, head)
	require.NoError(t, err)
	go func() {
		for i := 0; ; i++ {
			if _, err := io.WriteString(conn, piece(i)); err != nil {
				return
			}
			time.Sleep(pause) // the dribble itself, not a wait on the server
		}
	}()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(testTimeout)))
	r := bufio.NewReader(conn)
	for {
		if _, err := r.ReadString('\n'); err != nil {
			return time.Since(start)
		}
	}
}

// A re-exposed tool's result is passed on up to 1 MiB of JSON; past it the
// caller reads an isError that names the limit and says the tool ran.
func TestReexposedResultIsCapped(t *testing.T) {
	w := newWorkspace(t)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(t)

	w.write("small", strings.Repeat("s", 512<<10))
	res, err := c.call(context.Background(), "read_file", map[string]any{"path": w.path("small")}, "")
	require.NoError(t, err)
	require.False(t, res.IsError, resultText(res))
	assert.Len(t, resultText(res), 512<<10, "a result under the limit passes whole")

	w.write("big", strings.Repeat("b", 2<<20))
	res, err = c.call(context.Background(), "read_file", map[string]any{"path": w.path("big")}, "")
	require.NoError(t, err)
	require.True(t, res.IsError)
	assert.Contains(t, resultText(res), `read_file on downstream MCP server "demo" ran, but its result is `)
	assert.Contains(t, resultText(res), fmt.Sprintf("over durawait's limit of %d bytes (1 MiB)", workflows.MaxDownstreamResultBytes))
}
