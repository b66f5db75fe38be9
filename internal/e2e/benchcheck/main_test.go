package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const output = `goos: linux
BenchmarkColdStart-2   	      10	 521000000 ns/op	       521.0 healthz-p50-ms	       566.0 healthz-p99-ms	       566.0 healthz-max-ms
BenchmarkWaitForDetection-2   	      10	 1000 ns/op	       456.0 durable-p50-ms	       956.0 durable-p99-ms	 956.0 durable-max-ms	       452.0 inprocess-p50-ms	 951.0 inprocess-p99-ms	 951.0 inprocess-max-ms
BenchmarkWaitForTextLatency-2   	      10	 1000 ns/op	         1.27 text-p50-ms	         3.35 text-p99-ms	         3.36 text-max-ms
BenchmarkWaitAgentExitLatency-2   	      10	 1000 ns/op	        14.7 exit-p50-ms	        21.8 exit-p99-ms	        23.2 exit-max-ms
BenchmarkWaitAgentFanInLatency-2   	      10	 1000 ns/op	        24.1 fanin-p50-ms	        31.0 fanin-p99-ms	        31.0 fanin-max-ms
BenchmarkEventPostLatency-2   	      10	 1000 ns/op	         8.5 event-p50-ms	        11.2 event-p99-ms	        11.2 event-max-ms
BenchmarkEventHookLatency-2   	      10	 1000 ns/op	         8.5 hook-p50-ms	        15.1 hook-p99-ms	        15.1 hook-max-ms
BenchmarkReexposedCallOverhead-2   	      10	 1000 ns/op	         0.49 overhead-p50-ms
PASS
`

func parsed(t *testing.T, text string) map[string]map[string]float64 {
	t.Helper()
	stdout := os.Stdout
	os.Stdout, _ = os.Open(os.DevNull) // parse echoes its input
	defer func() { os.Stdout = stdout }()
	r, err := parse(strings.NewReader(text))
	require.NoError(t, err)
	return r
}

func TestFiguresWithinTheirBoundsPass(t *testing.T) {
	r := parsed(t, output)
	assert.Equal(t, 456.0/452.0, r["BenchmarkWaitForDetection"]["durable-p50-ms"]/r["BenchmarkWaitForDetection"]["inprocess-p50-ms"])
	lines, ok := check(r)
	assert.True(t, ok, strings.Join(lines, "\n"))
	assert.Len(t, lines, len(targets))
}

func TestAFigureOverItsBoundFails(t *testing.T) {
	slow := strings.Replace(output, "21.8 exit-p99-ms", "100.1 exit-p99-ms", 1)
	lines, ok := check(parsed(t, slow))
	assert.False(t, ok)
	assert.Contains(t, strings.Join(lines, "\n"), "FAIL wait_agent: CLI exit → result, p99 ms: 100")
	// Within the margin (50 ms × 2) it passes.
	_, ok = check(parsed(t, strings.Replace(output, "21.8 exit-p99-ms", "99.9 exit-p99-ms", 1)))
	assert.True(t, ok)
	// A detection ratio over 1.02 × 1.08 fails.
	_, ok = check(parsed(t, strings.Replace(output, "456.0 durable-p50-ms", "500.0 durable-p50-ms", 1)))
	assert.False(t, ok)
}

func TestAFigureNotMeasuredFails(t *testing.T) {
	var kept []string
	for _, l := range strings.Split(output, "\n") {
		if !strings.HasPrefix(l, "BenchmarkColdStart") {
			kept = append(kept, l)
		}
	}
	lines, ok := check(parsed(t, strings.Join(kept, "\n")))
	assert.False(t, ok)
	assert.Contains(t, strings.Join(lines, "\n"), "FAIL durawait serve cold start")
}

func TestALineThatIsNotANumberIsAnError(t *testing.T) {
	stdout := os.Stdout
	os.Stdout, _ = os.Open(os.DevNull)
	defer func() { os.Stdout = stdout }()
	_, err := parse(io.MultiReader(strings.NewReader("BenchmarkX-2 10 abc ns/op\n")))
	assert.Error(t, err)
}
