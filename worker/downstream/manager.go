// Package downstream keeps durawait's connections to the downstream MCP
// servers whose tools agents call through durawait and poll with wait_for.
//
// Each configured server gets one supervised connection: a stdio server's
// process is started and kept running, an HTTP server is connected to, and a
// connection that dies is re-established with jittered exponential backoff,
// which starts over only after a connection stayed up for a while. While a
// server is down, calls to its tools fail at once with an error naming it.
package downstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/durawait/durawait/activities"
)

// Transports a server may be reached by.
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// ServerConfig describes one downstream MCP server.
type ServerConfig struct {
	Name string
	// Command starts a stdio server: the program and its arguments.
	Command []string
	// Env is added to a stdio server's environment, which is otherwise
	// minimal (BaseEnvNames) unless Inherit says more.
	Env map[string]string
	// Inherit passes more of durawait's environment to a stdio server.
	Inherit Inherit
	// URL reaches an HTTP server (streamable HTTP, or SSE when Transport says so).
	URL       string
	Transport string
	// InProcess is a server that runs in durawait's own process (the
	// built-in probes), reached without a transport of the wire.
	InProcess *server.MCPServer
	// Expose re-exposes the server's tools to durawait's clients.
	Expose bool
}

// Options tune the connection supervisor.
type Options struct {
	// HealthInterval is how often a connected server is pinged.
	HealthInterval time.Duration
	// CallTimeout bounds one forwarded (non-probe) tool call.
	CallTimeout time.Duration
	// MinBackoff and MaxBackoff bound the delay between reconnect attempts
	// (before ±20 % jitter).
	MinBackoff, MaxBackoff time.Duration
	// StableAfter is how long a connection must stay up before the backoff
	// starts over; a server that drops connections sooner is retried with
	// growing delays.
	StableAfter time.Duration
}

func (o Options) withDefaults() Options {
	if o.HealthInterval <= 0 {
		o.HealthInterval = 5 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 5 * time.Minute
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 200 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.StableAfter <= 0 {
		o.StableAfter = 30 * time.Second
	}
	return o
}

// Manager owns the connections to all downstream servers.
type Manager struct {
	opts   Options
	logger *slog.Logger
	conns  []*conn
	byName map[string]*conn

	mu        sync.Mutex
	listeners []func()
	ready     sync.WaitGroup

	progress progressRoutes

	// sleep waits between connection attempts, and now tells how long a
	// connection lived; tests replace them.
	sleep func(ctx context.Context, d time.Duration) bool
	now   func() time.Time
}

// NewManager prepares connections to servers; Run starts them.
func NewManager(servers []ServerConfig, opts Options, logger *slog.Logger) *Manager {
	m := &Manager{opts: opts.withDefaults(), logger: logger, byName: map[string]*conn{}, sleep: sleep, now: time.Now}
	for _, cfg := range servers {
		c := &conn{cfg: cfg, m: m, changed: make(chan struct{}, 1)}
		m.conns = append(m.conns, c)
		m.byName[cfg.Name] = c
	}
	m.ready.Add(len(m.conns))
	return m
}

// Run connects to every server and keeps the connections up until ctx ends,
// then closes them all.
func (m *Manager) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, c := range m.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.supervise(ctx)
		}()
	}
	wg.Wait()
}

// WaitReady blocks until every server has had its first connection attempt,
// successful or not, so the tool catalog is as complete as it can be.
func (m *Manager) WaitReady(ctx context.Context) error {
	done := make(chan struct{})
	go func() { m.ready.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ServerNames lists the configured servers in configuration order.
func (m *Manager) ServerNames() []string {
	names := make([]string, len(m.conns))
	for i, c := range m.conns {
		names[i] = c.cfg.Name
	}
	return names
}

// ServerTools returns a server's tools as last listed (a server that is down
// keeps its last known tools), its expose setting, and its last connection
// error (nil while connected).
func (m *Manager) ServerTools(server string) ([]mcp.Tool, bool, error) {
	c, ok := m.byName[server]
	if !ok {
		return nil, false, fmt.Errorf("no downstream MCP server is named %q", server)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]mcp.Tool(nil), c.tools...), c.cfg.Expose, c.lastErr
}

// OnChanged registers fn to run whenever a server's tool list changes or
// the server becomes available or unavailable.
func (m *Manager) OnChanged(fn func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.listeners = append(m.listeners, fn)
}

func (m *Manager) notifyChanged() {
	m.mu.Lock()
	listeners := append([]func(){}, m.listeners...)
	m.mu.Unlock()
	for _, fn := range listeners {
		fn()
	}
}

// CallTool forwards a call to tool on server. A server that is down, or whose
// connection breaks during the call, yields an *activities.UnavailableError.
// When onProgress is not nil, the call asks the server for progress and
// onProgress receives each progress notification the server sends for it.
func (m *Manager) CallTool(ctx context.Context, server, tool string, args any, onProgress func(mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	c, ok := m.byName[server]
	if !ok {
		return nil, fmt.Errorf("no downstream MCP server is named %q", server)
	}
	return c.call(ctx, tool, args, onProgress)
}

// CallProbe implements activities.Prober for a canonical "<server>.<tool>".
func (m *Manager) CallProbe(ctx context.Context, canonical string, args json.RawMessage) (activities.ProbeOutput, error) {
	server, tool, ok := strings.Cut(canonical, ".")
	if !ok {
		return activities.ProbeOutput{}, fmt.Errorf("probe tool %q is not of the form <server>.<tool>", canonical)
	}
	res, err := m.CallTool(ctx, server, tool, args, nil)
	if err != nil {
		return activities.ProbeOutput{}, err
	}
	return activities.ProbeOutput{Text: Observation(res), IsError: res.IsError}, nil
}

// Observation is what wait_for matches against: the text content of a tool
// result joined by newlines, or its structured content as JSON when it has
// no text.
func Observation(res *mcp.CallToolResult) string {
	var texts []string
	for _, c := range res.Content {
		if t, ok := mcp.AsTextContent(c); ok {
			texts = append(texts, t.Text)
		}
	}
	if len(texts) > 0 {
		return strings.Join(texts, "\n")
	}
	if len(res.RawStructuredContent) > 0 {
		return string(res.RawStructuredContent)
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return ""
}

// conn is one supervised connection.
type conn struct {
	cfg     ServerConfig
	m       *Manager
	changed chan struct{} // signals the supervisor that the connection broke

	mu      sync.Mutex
	client  *client.Client // nil while down
	tools   []mcp.Tool
	lastErr error
}

func (c *conn) logger() *slog.Logger { return c.m.logger.With("server", c.cfg.Name) }

func (c *conn) current() (*client.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client == nil {
		err := c.lastErr
		if err == nil {
			err = errors.New("not connected yet")
		}
		return nil, &activities.UnavailableError{Server: c.cfg.Name, Err: err}
	}
	return c.client, nil
}

func (c *conn) call(ctx context.Context, tool string, args any, onProgress ProgressFunc) (*mcp.CallToolResult, error) {
	cl, err := c.current()
	if err != nil {
		return nil, err
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	if trace := traceMeta(ctx); trace != nil {
		req.Params.Meta = &mcp.Meta{AdditionalFields: trace}
	}
	if onProgress != nil {
		token, remove := c.m.progress.add(c.cfg.Name, onProgress)
		defer remove()
		if req.Params.Meta == nil {
			req.Params.Meta = &mcp.Meta{}
		}
		req.Params.Meta.ProgressToken = token
	}
	res, err := cl.CallTool(ctx, req)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && ctx.Err() == nil {
			c.markBroken(cl, err)
			return nil, &activities.UnavailableError{Server: c.cfg.Name, Err: err}
		}
		return nil, fmt.Errorf("downstream MCP server %q, tool %q: %w", c.cfg.Name, tool, err)
	}
	return res, nil
}

// markBroken drops cl if it is still the current client and wakes the
// supervisor to reconnect.
func (c *conn) markBroken(cl *client.Client, err error) {
	c.mu.Lock()
	if c.client != cl {
		c.mu.Unlock()
		return
	}
	c.client = nil
	c.lastErr = err
	c.mu.Unlock()
	c.m.notifyChanged() // now unavailable
	go func() { _ = cl.Close() }()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func sameTools(a, b []mcp.Tool) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// traceMeta is the W3C trace context of ctx's span (traceparent,
// tracestate) as _meta fields of a downstream call, the convention MCP
// servers read (durawait's own front end reads it so): the downstream
// server's spans join the trace of the probe or re-exposed call. nil when
// ctx has no valid span (tracing off). Baggage is not passed on.
func traceMeta(ctx context.Context) map[string]any {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	if carrier["traceparent"] == "" {
		return nil
	}
	out := make(map[string]any, len(carrier))
	for k, v := range carrier {
		out[k] = v
	}
	return out
}
