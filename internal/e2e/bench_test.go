package e2e

import (
	"context"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// The benchmarks measure the figures of the design's performance table on
// real processes. Each reports its own metrics (milliseconds, medians and
// worst cases) beside Go's ns/op; run them with `make bench`.

// report adds the median, the 99th percentile and the worst of samples, in
// milliseconds.
func report(b *testing.B, name string, samples []time.Duration) {
	if len(samples) == 0 {
		return
	}
	b.ReportMetric(ms(percentile(samples, 0.5)), name+"-p50-ms")
	b.ReportMetric(ms(percentile(samples, 0.99)), name+"-p99-ms")
	b.ReportMetric(ms(samples[len(samples)-1]), name+"-max-ms")
}

// BenchmarkColdStart: `durawait serve` on a new data dir until /healthz is 200.
func BenchmarkColdStart(b *testing.B) {
	var samples []time.Duration
	for range b.N {
		w := newWorkspace(b)
		config := w.writeConfig(w.demoServer("demo"))
		start := time.Now()
		inst := w.startServe(config)
		samples = append(samples, time.Since(start))
		inst.kill9()
	}
	report(b, "healthz", samples)
}

// BenchmarkWaitForDetection: the time from the probe's output changing to
// wait_for's result, against an in-process, non-durable poll loop calling
// the same probe server with the same interval.
func BenchmarkWaitForDetection(b *testing.B) {
	w := newWorkspace(b)
	inst := w.startServe(w.writeConfig(w.demoServer("demo")))
	c := inst.client(b)
	direct := directProbeClient(b, w)

	var durable, inProcess []time.Duration
	for i := range b.N {
		name := "status-" + itoa(i)
		w.write(name, "pending")
		done := make(chan time.Time, 1)
		go func() {
			c.waitFor(b, readFileWait(w.path(name), nil))
			done <- time.Now()
		}()
		// Change the output at a point spread over the poll interval,
		// counted from the first sample (the call log's last write), as the
		// in-process loop below counts from its first call.
		eventually(b, "the first sample", func() bool { return w.calls(name) >= 1 })
		st, err := os.Stat(w.path("calls.log"))
		require.NoError(b, err)
		time.Sleep(time.Until(st.ModTime().Add(time.Duration(i%10)*100*time.Millisecond + 50*time.Millisecond)))
		changed := time.Now()
		w.write(name, "READY")
		durable = append(durable, (<-done).Sub(changed))

		w.write(name, "pending")
		inProcess = append(inProcess, pollDirect(b, direct, w, name, time.Duration(i%10)*100*time.Millisecond))
	}
	report(b, "durable", durable)
	report(b, "inprocess", inProcess)
}

// directProbeClient is an MCP client straight to a demo probe server.
func directProbeClient(b *testing.B, w *workspace) *client.Client {
	c, err := client.NewStdioMCPClient(bin.demoprobe, nil)
	require.NoError(b, err)
	b.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	_, err = c.Initialize(context.Background(), init)
	require.NoError(b, err)
	return c
}

// pollDirect runs the non-durable loop: sample at once, then every second,
// until READY; the output changes after offset. It returns the latency.
func pollDirect(b *testing.B, c *client.Client, w *workspace, name string, offset time.Duration) time.Duration {
	changed := make(chan time.Time, 1)
	go func() {
		time.Sleep(offset + 50*time.Millisecond)
		changed <- time.Now()
		w.write(name, "READY")
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		req := mcp.CallToolRequest{}
		req.Params.Name = "read_file"
		req.Params.Arguments = map[string]any{"path": w.path(name)}
		res, err := c.CallTool(context.Background(), req)
		require.NoError(b, err)
		if strings.Contains(resultText(res), "READY") {
			return time.Since(<-changed)
		}
		<-tick.C
	}
}

// BenchmarkWaitForTextLatency: the time from text printed in a pane to
// wait_for_text's result. The pane's shell prints each line the bench
// writes to a FIFO, so the clock starts when the text is handed to the
// pane (starting it before a `tmux send-keys Enter` would add the tmux
// client's own start, 3 to 11 ms here, to every sample).
func BenchmarkWaitForTextLatency(b *testing.B) {
	tw := newTmuxWorld(b, 60)
	c := tw.startServe(tw.config).client(b)
	pane := listPanes(b, c)[0]
	fifo := tw.path("lines")
	require.NoError(b, syscall.Mkfifo(fifo, 0o600))
	tw.typeLine(pane.PaneID, "while read -r l; do printf '%s\\n' \"$l\"; done < "+fifo)
	lines, err := os.OpenFile(fifo, os.O_WRONLY, 0) // blocks until the shell opens it
	require.NoError(b, err)
	defer lines.Close()
	var samples []time.Duration
	for i := range b.N {
		token := "TOKEN-" + itoa(i)
		done := make(chan time.Time, 1)
		go func() {
			waitTextWithProgress(b, c, pane, token, token)
			done <- time.Now()
		}()
		eventually(b, "the baseline read", func() bool { return len(c.messagesOf(token)) > 0 })
		printed := time.Now()
		_, err := lines.WriteString(token + "\n")
		require.NoError(b, err)
		samples = append(samples, (<-done).Sub(printed))
		eventually(b, "the client to detach", func() bool { return tw.controlClients() == 0 })
	}
	report(b, "text", samples)
}

// BenchmarkWaitAgentExitLatency: the time from the CLI's exit (the
// supervisor recording it) to wait_agent's result.
func BenchmarkWaitAgentExitLatency(b *testing.B) {
	w := newAgentWorkspace(b, 60)
	c := w.startServe(w.config).client(b)
	var samples []time.Duration
	for i := range b.N {
		name := "quick" + itoa(i)
		w.script(name, `{"type":"system","subtype":"init","session_id":"{session}"}`, "@wait go-"+name,
			`{"type":"result","subtype":"success","is_error":false,"result":"ok"}`)
		id := c.startAgent(b, "fake", name, nil)
		done := make(chan time.Time, 1)
		go func() {
			c.waitUntilFinished(b, id)
			done <- time.Now()
		}()
		exitFile := filepath.Join(w.path("data/agents"), strings.ReplaceAll(id, "/", "_"), "exit")
		eventually(b, "the CLI to start", func() bool { return readFile(w.path("argv.log")) != "" })
		w.release("go-" + name)
		finished := <-done
		st, err := os.Stat(exitFile)
		require.NoError(b, err)
		samples = append(samples, finished.Sub(st.ModTime()))
	}
	b.Logf("exit -> result, in order: %v", samples)
	report(b, "exit", samples)
}

// BenchmarkWaitAgentFanInLatency: ten sub-agents started, one wait_agent
// on all ten (mode any); the time from the first CLI's exit (the
// supervisor recording it) to the call's answer, which carries all ten
// payloads (the nine released waits included).
func BenchmarkWaitAgentFanInLatency(b *testing.B) {
	const fanOut = 10
	w := newAgentWorkspace(b, 60)
	inst := w.startServe(w.config)
	c := inst.client(b)
	var samples []time.Duration
	for i := range b.N {
		var ids []string
		for j := range fanOut {
			name := "fan" + itoa(i) + "x" + itoa(j)
			w.script(name, `{"type":"system","subtype":"init","session_id":"{session}"}`, "@wait go-"+name,
				`{"type":"result","subtype":"success","is_error":false,"result":"ok"}`)
			ids = append(ids, c.startAgent(b, "fake", name, nil))
		}
		first := "fan" + itoa(i) + "x" + itoa(i%fanOut)
		eventually(b, "the CLIs to start", func() bool { return strings.Count(readFile(w.path("argv.log")), "\n") >= (i+1)*fanOut })
		results := c.waitAgentsUntilMet("any", ids...)
		// The clock is for a call whose waits are in place: the exit
		// comes once the invocations took them (durawait's log says
		// "wait attached" with the call's IDs).
		eventually(b, "the fan-in's waits to be taken", func() bool {
			return strings.Contains(inst.log.String(), strings.Join(ids[:2], ","))
		})
		w.release("go-" + first)
		met(b, results)
		finished := time.Now()
		exitFile := filepath.Join(w.path("data/agents"), strings.ReplaceAll(ids[i%fanOut], "/", "_"), "exit")
		st, err := os.Stat(exitFile)
		require.NoError(b, err)
		samples = append(samples, finished.Sub(st.ModTime()))
		for j := range fanOut {
			if j != i%fanOut {
				w.release("go-fan" + itoa(i) + "x" + itoa(j))
			}
		}
		// Every CLI of the round ends before the next (and before the
		// workspace goes, which would leave a CLI waiting on a file in it).
		eventually(b, "the round's CLIs to end", func() bool {
			return strings.Count(readFile(w.path("ends.log")), "\n") >= (i+1)*fanOut
		})
	}
	b.Logf("first exit of %d -> fan-in result, in order: %v", fanOut, samples)
	report(b, "fanin", samples)
}

// saveProfile fetches a profile from url into path (a benchmark's side
// product: a failure is logged, not fatal).
func saveProfile(b *testing.B, url, path string) {
	var resp *http.Response
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		// The listener opens as durawait starts.
		if resp, err = http.Get(url); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		b.Logf("profile: %v", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		b.Logf("profile: %v", err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		b.Logf("profile: %v", err)
	}
}

// failures counts the distinct answers of failed calls (their first 120
// characters), so a failed run says why.
type failures struct {
	mu sync.Mutex
	m  map[string]int
}

func (f *failures) note(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]int{}
	}
	if len(msg) > 120 {
		msg = msg[:120]
	}
	f.m[msg]++
}

func (f *failures) counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.m)
}

// peakRSS reads a process's peak resident set in KiB.
func peakRSS(pid int) int {
	for _, line := range strings.Split(readFile("/proc/"+strconv.Itoa(pid)+"/status"), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return kb
		}
	}
	return 0
}

// BenchmarkReexposedCallOverhead: one call of a re-exposed tool of an HTTP
// downstream server (the demo probe's clock) through `durawait serve`,
// against the same call made to the server directly. It reports p50 and
// p99 of both, and the overhead of the median.
func BenchmarkReexposedCallOverhead(b *testing.B) {
	addr := freeAddr(b)
	probe := exec.Command(bin.demoprobe, "--http", addr)
	require.NoError(b, probe.Start())
	b.Cleanup(func() { _ = probe.Process.Kill(); _ = probe.Wait() })
	url := "http://" + addr + "/mcp"
	var direct *mcpClient
	eventually(b, "the demo probe to serve HTTP", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	c, err := client.NewStreamableHttpClient(url)
	require.NoError(b, err)
	direct = initialize(b, c)

	w := newWorkspace(b)
	through := w.startServe(w.writeConfig(server{name: "demo", url: url})).client(b)

	ctx := context.Background()
	call := func(c *mcpClient) time.Duration {
		start := time.Now()
		res, err := c.call(ctx, "clock", nil, "")
		elapsed := time.Since(start)
		require.NoError(b, err)
		require.False(b, res.IsError, resultText(res))
		return elapsed
	}
	// Warm both paths (connections, caches) before measuring.
	for range 5 {
		call(direct)
		call(through)
	}
	var directSamples, throughSamples []time.Duration
	b.ResetTimer()
	for range b.N {
		directSamples = append(directSamples, call(direct))
		throughSamples = append(throughSamples, call(through))
	}
	b.StopTimer()
	reportPercentiles(b, "direct", directSamples)
	reportPercentiles(b, "durawait", throughSamples)
	b.ReportMetric(ms(percentile(throughSamples, 0.5)-percentile(directSamples, 0.5)), "overhead-p50-ms")
}

// reportPercentiles adds the p50 and p99 of samples, in milliseconds.
func reportPercentiles(b *testing.B, name string, samples []time.Duration) {
	b.ReportMetric(ms(percentile(samples, 0.5)), name+"-p50-ms")
	b.ReportMetric(ms(percentile(samples, 0.99)), name+"-p99-ms")
}

// percentile is the q-quantile of samples (nearest rank); it sorts them.
func percentile(samples []time.Duration, q float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	i := int(math.Ceil(q*float64(len(samples)))) - 1
	return samples[max(0, min(i, len(samples)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
