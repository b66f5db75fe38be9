// Command benchcheck holds the single-wait figures of `go test -bench`
// output (make bench-check) to their targets in docs/performance.md, each
// with a margin for a shared CI machine, and exits 1 when one misses it.
//
//	go test -run '^$' -bench 'ColdStart|Detection|Latency|Overhead' -benchtime 10x ./internal/e2e/ | go run ./internal/e2e/benchcheck
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// target is one figure's bound: the documented target, and the margin by
// which a run may exceed it before the check fails.
type target struct {
	// benchmark and metric name the figure (a ratio: metric over per).
	benchmark, metric, per string
	// documented is the target in docs/performance.md; margin multiplies
	// it into the bound the check enforces.
	documented, margin float64
	// what says the figure in words.
	what string
}

// targets are the single-wait figures of docs/performance.md.
var targets = []target{
	{benchmark: "BenchmarkColdStart", metric: "healthz-p50-ms", documented: 600, margin: 1.25, what: "durawait serve cold start → /healthz 200, p50 ms"},
	{benchmark: "BenchmarkWaitForDetection", metric: "durable-p50-ms", per: "inprocess-p50-ms", documented: 1.02, margin: 1.08, what: "wait_for detection, p50 over an in-process loop's"},
	{benchmark: "BenchmarkWaitForTextLatency", metric: "text-p99-ms", documented: 10, margin: 2, what: "wait_for_text: text printed → result, p99 ms"},
	{benchmark: "BenchmarkWaitAgentExitLatency", metric: "exit-p99-ms", documented: 50, margin: 2, what: "wait_agent: CLI exit → result, p99 ms"},
	{benchmark: "BenchmarkWaitAgentFanInLatency", metric: "fanin-p99-ms", documented: 50, margin: 2, what: "wait_agent on 10 (any): first CLI exit → result, p99 ms"},
	{benchmark: "BenchmarkEventPostLatency", metric: "event-p99-ms", documented: 20, margin: 2, what: "post_event → the waiting wait_for_event's result, p99 ms"},
	{benchmark: "BenchmarkEventHookLatency", metric: "hook-p99-ms", documented: 20, margin: 2, what: "signed POST /hooks/{name} → the waiting wait_for_event's result, p99 ms"},
	{benchmark: "BenchmarkReexposedCallOverhead", metric: "overhead-p50-ms", documented: 5, margin: 2, what: "re-exposed call overhead, p50 ms"},
}

func main() {
	results, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcheck:", err)
		os.Exit(2)
	}
	lines, ok := check(results)
	for _, l := range lines {
		fmt.Println(l)
	}
	if !ok {
		os.Exit(1)
	}
}

// parse reads the metrics of each benchmark from `go test -bench` output
// (a line "BenchmarkName-N  iterations  value unit  value unit ..."),
// echoing the output as it goes.
func parse(r io.Reader) (map[string]map[string]float64, error) {
	out := map[string]map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Println(line)
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue // not a result line
		}
		name, _, _ := strings.Cut(fields[0], "-")
		metrics := map[string]float64{}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is not a number in %q", name, fields[i], line)
			}
			metrics[fields[i+1]] = v
		}
		out[name] = metrics
	}
	return out, sc.Err()
}

// check holds results to targets: one line per figure, and whether all
// are within their bounds. A figure that is missing fails.
func check(results map[string]map[string]float64) ([]string, bool) {
	ok := true
	var lines []string
	for _, t := range targets {
		bound := t.documented * t.margin
		m, ran := results[t.benchmark]
		v, has := m[t.metric]
		if t.per != "" && has {
			per, hasPer := m[t.per]
			has = hasPer && per > 0
			if has {
				v /= per
			}
		}
		switch {
		case !ran || !has:
			ok = false
			lines = append(lines, fmt.Sprintf("FAIL %s: not measured (%s %s)", t.what, t.benchmark, t.metric))
		case v > bound:
			ok = false
			lines = append(lines, fmt.Sprintf("FAIL %s: %.3g, over the target %.3g by more than the margin (bound %.3g)", t.what, v, t.documented, bound))
		default:
			lines = append(lines, fmt.Sprintf("ok   %s: %.3g (target %.3g, bound %.3g)", t.what, v, t.documented, bound))
		}
	}
	return lines, ok
}
