package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	collectortracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// traceCollector is an OTLP/HTTP trace receiver: what a collector gets from
// durawait.
type traceCollector struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	// services are the service.name values of the resources received.
	services map[string]bool
	bad      []string
}

func (c *traceCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	raw, err := io.ReadAll(body)
	var req collectortracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &req)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		c.bad = append(c.bad, fmt.Sprintf("%s %s %s: %v", r.Method, r.URL.Path, r.Header.Get("Content-Type"), err))
		http.Error(w, "not OTLP/HTTP protobuf traces", http.StatusBadRequest)
		return
	}
	if c.services == nil {
		c.services = map[string]bool{}
	}
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				c.services[kv.Value.GetStringValue()] = true
			}
		}
		for _, ss := range rs.ScopeSpans {
			c.spans = append(c.spans, ss.Spans...)
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// chain follows, in trace traceID, the parents of the first span named
// leaf up to the trace's root within what was received; nil while that
// span has not arrived.
func (c *traceCollector) chain(traceID, leaf string) []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	byID := map[string]*tracepb.Span{}
	var start *tracepb.Span
	for _, s := range c.spans {
		if hex.EncodeToString(s.TraceId) != traceID {
			continue
		}
		byID[hex.EncodeToString(s.SpanId)] = s
		if strings.HasPrefix(s.Name, leaf) && start == nil {
			start = s
		}
	}
	if start == nil {
		return nil
	}
	out := []*tracepb.Span{start}
	for s := start; len(s.ParentSpanId) > 0; {
		parent, ok := byID[hex.EncodeToString(s.ParentSpanId)]
		if !ok {
			break
		}
		out = append(out, parent)
		s = parent
	}
	return out
}

// dump lists every span received: trace, ID, parent, kind, name.
func (c *traceCollector) dump() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, s := range c.spans {
		fmt.Fprintf(&b, "%x %x <- %x %s %s\n", s.TraceId, s.SpanId, s.ParentSpanId, s.Kind, s.Name)
	}
	return b.String()
}

func names(spans []*tracepb.Span) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}

func spanAttrs(s *tracepb.Span) map[string]any {
	out := map[string]any{}
	for _, kv := range s.Attributes {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.Key] = v.IntValue
		case *commonpb.AnyValue_BoolValue:
			out[kv.Key] = v.BoolValue
		default:
			out[kv.Key] = kv.Value.String()
		}
	}
	return out
}

// The chain from the probe call up to the caller, as names: the probe
// span, the activity's and the workflow's spans (Temporal's tracing
// interceptor), the tool-call span, and (over HTTP with a traceparent
// header) the otelhttp span.
var probeChain = []string{"probe demo.read_file", "RunActivity:PollProbe", "StartActivity:PollProbe", "RunWorkflow:WaitFor", "StartWorkflow:WaitFor", "wait_for"}

// startCollector serves an OTLP/HTTP collector for the test, closed with
// it; a failed test logs the spans it received.
func startCollector(t *testing.T) (*traceCollector, *httptest.Server) {
	t.Helper()
	collector := &traceCollector{}
	otlp := httptest.NewServer(collector)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("spans received:\n%s", collector.dump())
		}
		otlp.Close()
	})
	return collector, otlp
}

// TestOTelTraceRunsFromTheCallerIntoTheProbeCall runs real waits through
// the real binary (embedded engine, worker, front, a real MCP client over
// HTTP) exporting over OTLP/HTTP to a collector in the test, and reads the
// parent/child links and the metrics a scrape of /metrics shows.
func TestOTelTraceRunsFromTheCallerIntoTheProbeCall(t *testing.T) {
	collector, otlp := startCollector(t)

	w := newWorkspace(t)
	inst := w.startServeEnv(w.writeConfig(w.demoServer("demo")), []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.URL,
		// The stock embedded engine refused to start on this one, and
		// exported over gRPC to this HTTP endpoint without it.
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf",
		"OTEL_TRACES_EXPORTER=otlp",
		"OTEL_METRICS_EXPORTER=none",
		"OTEL_BSP_SCHEDULE_DELAY=100",
		"OTEL_SERVICE_NAME=durawait-e2e",
	})

	const (
		headerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
		headerParent = "00f067aa0ba902b7"
		metaTrace    = "0af7651916cd43dd8448eb211c80319c"
		metaParent   = "b7ad6b7169203331"
	)
	hc, err := client.NewStreamableHttpClient("http://"+inst.http+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"traceparent": "00-" + headerTrace + "-" + headerParent + "-01"}))
	require.NoError(t, err)
	c := initialize(t, hc)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	// 1. matched, traced from the HTTP header.
	w.write("a", "READY")
	first := c.waitFor(t, readFileWait(w.path("a"), nil))
	require.Equal(t, "matched", first.Reason)

	// 2. matched, with trace context in _meta: it wins over the header.
	w.write("b", "READY")
	req := mcp.CallToolRequest{}
	req.Params.Name = "wait_for"
	req.Params.Arguments = readFileWait(w.path("b"), nil)
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "00-" + metaTrace + "-" + metaParent + "-01"}}
	res, err := c.CallTool(ctx, req)
	require.NoError(t, err)
	require.False(t, res.IsError, resultText(res))
	second := decodeWait(t, res)
	require.Equal(t, "matched", second.Reason)

	// 3. a timeout and 4. bad arguments, from a client that sends no trace
	// context (each call is a trace of its own).
	c = inst.client(t)
	third := c.waitFor(t, readFileWait(w.path("never"), map[string]any{"max_wait_sec": 2}))
	require.Equal(t, "timeout", third.Reason)

	bad := c.waitForRaw(t, map[string]any{"probe": map[string]any{"tool": "read_file"}})
	require.True(t, bad.IsError)

	// The header's trace: HTTP span -> tool span -> Temporal -> probe.
	var chain []*tracepb.Span
	eventually(t, "the header's trace from the HTTP request to the probe call", func() bool {
		chain = collector.chain(headerTrace, "probe ")
		return len(chain) == len(probeChain)+1
	})
	assert.Equal(t, append(append([]string{}, probeChain...), "mcp"), names(chain))
	root := chain[len(chain)-1]
	assert.Equal(t, headerParent, hex.EncodeToString(root.ParentSpanId), "the HTTP span's parent is the caller's span")
	assert.Equal(t, tracepb.Span_SPAN_KIND_SERVER, root.Kind)
	tool := chain[len(chain)-2]
	assert.Equal(t, tracepb.Span_SPAN_KIND_INTERNAL, tool.Kind)
	// One probe, one name in the trace: the tool span names the probe as
	// resolved (the call said read_file), as the probe span does.
	assert.Equal(t, map[string]any{"wait_condition": "matches", "probe_tool": "demo.read_file",
		"poll_count": int64(first.Samples), "stop_reason": "matched", "elapsed_ms": int64(first.ElapsedSec*1000 + 0.5), "wait_start": "started",
		"durawait.target": waitForTarget(t, w.path("a"))}, spanAttrs(tool))
	assert.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, chain[0].Kind, "the probe call is a client span")
	assert.Equal(t, spanAttrs(tool)["probe_tool"], spanAttrs(chain[0])["probe_tool"], "the tool span and the probe span name the probe alike")
	// The downstream server got the probe span's context in _meta.
	assert.Contains(t, readFile(w.path("calls.log.trace")),
		"read_file 00-"+headerTrace+"-"+hex.EncodeToString(chain[0].SpanId)+"-01\n", "traceparent in the probe call's _meta")

	// The _meta trace: the tool span is a server span under the caller's.
	eventually(t, "the _meta trace from the tool call to the probe call", func() bool {
		chain = collector.chain(metaTrace, "probe ")
		return len(chain) == len(probeChain)
	})
	assert.Equal(t, probeChain, names(chain))
	tool = chain[len(chain)-1]
	assert.Equal(t, metaParent, hex.EncodeToString(tool.ParentSpanId))
	assert.Equal(t, tracepb.Span_SPAN_KIND_SERVER, tool.Kind)

	collector.mu.Lock()
	assert.Empty(t, collector.bad, "every export was OTLP/HTTP protobuf")
	assert.Equal(t, map[string]bool{"durawait-e2e": true}, collector.services, "the embedded engine exports nothing")
	collector.mu.Unlock()

	// The metrics, scraped over HTTP.
	metrics := scrape(t, "http://"+inst.http+"/metrics")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("durawait's metrics:\n%s", strings.Join(metrics.matching("durawait_"), "\n"))
		}
	})
	assert.Equal(t, 4.0, metrics.value(`durawait_waits_started_total`, `tool="wait_for"`))
	assert.Equal(t, 3.0, metrics.value(`durawait_waits_start_or_attach_total`, `tool="wait_for"`, `wait_start="started"`),
		"three waits started; the call with bad arguments reached none")
	assert.Equal(t, 2.0, metrics.value(`durawait_waits_ended_total`, `outcome="matched"`, `tool="wait_for"`))
	assert.Equal(t, 1.0, metrics.value(`durawait_waits_ended_total`, `outcome="timeout"`, `tool="wait_for"`))
	assert.Equal(t, 1.0, metrics.value(`durawait_waits_ended_total`, `outcome="error"`, `tool="wait_for"`))
	assert.Equal(t, 0.0, metrics.value(`durawait_waits_in_flight`, `tool="wait_for"`))
	assert.Equal(t, 2.0, metrics.value(`durawait_wait_duration_seconds_count`, `outcome="matched"`, `tool="wait_for"`))
	assert.Equal(t, 2.0, metrics.value(`durawait_wait_for_detection_latency_seconds_count`, `outcome="matched"`))
	assert.Equal(t, float64(first.Samples+second.Samples+third.Samples), metrics.value(`durawait_wait_for_samples_total`),
		"every sample the probe loops took")
	assert.Equal(t, 1.0, metrics.value(`durawait_downstream_available`, `server="demo"`))
	assert.True(t, metrics.has("temporal_"), "the Temporal SDK's metrics go through the same provider")
	assert.True(t, metrics.has("http_server_"), "otelhttp's metrics of the /mcp requests")
	assert.True(t, metrics.has("go_goroutines"), "the Go runtime's metrics")
	assert.True(t, metrics.has("process_resident_memory_bytes"), "the process's metrics")
	promtoolCheck(t, "http://"+inst.http+"/metrics")
}

// promtoolCheck runs `promtool check metrics` (Debian's prometheus package)
// on a scrape of url: every metric has help text and a sound name.
func promtoolCheck(t *testing.T, url string) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool is needed (apt-get install -y prometheus)")
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics:\n%s", out)
}

// promMetrics is a scrape of a Prometheus text exposition.
type promMetrics []string

var promLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$`)

func scrape(t *testing.T, url string) promMetrics {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out promMetrics
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// value is the one sample of name whose labels include every label given;
// the test fails when there is not exactly one.
func (m promMetrics) value(name string, labels ...string) float64 {
	var found []float64
	for _, line := range m {
		g := promLine.FindStringSubmatch(line)
		if g == nil || g[1] != name {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(g[2], l) {
				ok = false
			}
		}
		if ok {
			v, err := strconv.ParseFloat(g[3], 64)
			if err == nil {
				found = append(found, v)
			}
		}
	}
	if len(found) != 1 {
		return -1
	}
	return found[0]
}

// has reports whether some sample's name starts with prefix.
func (m promMetrics) has(prefix string) bool { return len(m.matching(prefix)) > 0 }

// matching are the samples whose name starts with prefix.
func (m promMetrics) matching(prefix string) []string {
	var out []string
	for _, line := range m {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return out
}

// With DURAWAIT_ENGINE_OTEL=1 the embedded engine exports its own spans,
// over the protocol asked for (here OTLP/HTTP), beside durawait's.
func TestOTelEngineExportsItsSpansOnlyWhenOptedIn(t *testing.T) {
	collector, otlp := startCollector(t)
	w := newWorkspace(t)
	inst := w.startServeEnv(w.writeConfig(w.demoServer("demo")), []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_METRICS_EXPORTER=none",
		"OTEL_BSP_SCHEDULE_DELAY=100",
		"OTEL_SERVICE_NAME=durawait-e2e",
		"DURAWAIT_ENGINE_OTEL=1",
	})
	w.write("a", "READY")
	require.Equal(t, "matched", inst.client(t).waitFor(t, readFileWait(w.path("a"), nil)).Reason)
	eventually(t, "spans of the engine's frontend and of durawait", func() bool {
		collector.mu.Lock()
		defer collector.mu.Unlock()
		return collector.services["durawait-e2e.frontend"] && collector.services["durawait-e2e"]
	})
	collector.mu.Lock()
	defer collector.mu.Unlock()
	assert.Empty(t, collector.bad, "every export was OTLP/HTTP protobuf")
}

// Over stdio, trace context in _meta is the tool span's parent too.
func TestOTelStdioHonoursMeta(t *testing.T) {
	collector, otlp := startCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.URL)
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	w := newWorkspace(t)
	c, _ := w.stdioClientNoDaemon(w.writeConfig(w.demoServer("demo")))

	const traceID, parentID = "5af7651916cd43dd8448eb211c80319d", "c7ad6b7169203332"
	w.write("a", "READY")
	req := mcp.CallToolRequest{}
	req.Params.Name = "wait_for"
	req.Params.Arguments = readFileWait(w.path("a"), nil)
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "00-" + traceID + "-" + parentID + "-01"}}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	require.NoError(t, err)
	require.False(t, res.IsError, resultText(res))

	var chain []*tracepb.Span
	eventually(t, "the _meta trace from the stdio call to the probe call", func() bool {
		chain = collector.chain(traceID, "probe ")
		return len(chain) == len(probeChain)
	})
	assert.Equal(t, probeChain, names(chain))
	tool := chain[len(chain)-1]
	assert.Equal(t, parentID, hex.EncodeToString(tool.ParentSpanId))
	assert.Equal(t, tracepb.Span_SPAN_KIND_SERVER, tool.Kind)
}

// An OTEL_* value durawait cannot honour stops the start with a message
// naming the variable.
func TestOTelBadProtocolStopsTheStart(t *testing.T) {
	w := newWorkspace(t)
	cmd := exec.Command(bin.durawait, serveArgs(w.writeConfig(w.demoServer("demo")), freeAddr(t))...)
	cmd.Env = append(os.Environ(), append(w.env(), "OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=http/json")...)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	assert.Contains(t, string(out), `OTEL_EXPORTER_OTLP_PROTOCOL: must be grpc or http/protobuf (got "http/json")`)
}
