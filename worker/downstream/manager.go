// Package downstream keeps durawait's connections to the downstream MCP
// servers whose tools agents call through durawait and poll with wait_for.
//
// Each configured server gets one supervised connection: a stdio server's
// process is started and kept running, an HTTP server is connected to, and a
// connection that dies is re-established with exponential backoff. While a
// server is down, calls to its tools fail at once with an error naming it.
package downstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

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
	// Env is added to a stdio server's environment.
	Env map[string]string
	// URL reaches an HTTP server (streamable HTTP, or SSE when Transport says so).
	URL       string
	Transport string
	// Expose re-exposes the server's tools to durawait's clients.
	Expose bool
}

// Options tune the connection supervisor.
type Options struct {
	// HealthInterval is how often a connected server is pinged.
	HealthInterval time.Duration
	// CallTimeout bounds one forwarded (non-probe) tool call.
	CallTimeout time.Duration
	// MinBackoff and MaxBackoff bound the delay between reconnect attempts.
	MinBackoff, MaxBackoff time.Duration
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
}

// NewManager prepares connections to servers; Run starts them.
func NewManager(servers []ServerConfig, opts Options, logger *slog.Logger) *Manager {
	m := &Manager{opts: opts.withDefaults(), logger: logger, byName: map[string]*conn{}}
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

// OnToolsChanged registers fn to run whenever a server's tool list changes.
func (m *Manager) OnToolsChanged(fn func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.listeners = append(m.listeners, fn)
}

func (m *Manager) notifyToolsChanged() {
	m.mu.Lock()
	listeners := append([]func(){}, m.listeners...)
	m.mu.Unlock()
	for _, fn := range listeners {
		fn()
	}
}

// CallTool forwards a call to tool on server. A server that is down, or whose
// connection breaks during the call, yields an *activities.UnavailableError.
func (m *Manager) CallTool(ctx context.Context, server, tool string, args any) (*mcp.CallToolResult, error) {
	c, ok := m.byName[server]
	if !ok {
		return nil, fmt.Errorf("no downstream MCP server is named %q", server)
	}
	return c.call(ctx, tool, args)
}

// CallProbe implements activities.Prober for a canonical "<server>.<tool>".
func (m *Manager) CallProbe(ctx context.Context, canonical string, args json.RawMessage) (activities.ProbeOutput, error) {
	server, tool, ok := strings.Cut(canonical, ".")
	if !ok {
		return activities.ProbeOutput{}, fmt.Errorf("probe tool %q is not of the form <server>.<tool>", canonical)
	}
	res, err := m.CallTool(ctx, server, tool, args)
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

func (c *conn) call(ctx context.Context, tool string, args any) (*mcp.CallToolResult, error) {
	cl, err := c.current()
	if err != nil {
		return nil, err
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
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
	go func() { _ = cl.Close() }()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// supervise keeps the connection up until ctx ends.
func (c *conn) supervise(ctx context.Context) {
	backoff := c.m.opts.MinBackoff
	first := true
	for ctx.Err() == nil {
		cl, err := c.connect(ctx)
		if first {
			c.m.ready.Done()
			first = false
		}
		if err != nil {
			c.mu.Lock()
			c.lastErr = err
			c.mu.Unlock()
			c.logger().Warn("downstream MCP server unavailable; retrying", "error", err, "retry_in", backoff)
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, c.m.opts.MaxBackoff)
			continue
		}
		backoff = c.m.opts.MinBackoff
		c.watch(ctx, cl)
	}
}

// watch pings a live connection until it breaks or ctx ends.
func (c *conn) watch(ctx context.Context, cl *client.Client) {
	ticker := time.NewTicker(c.m.opts.HealthInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			c.mu.Lock()
			if c.client == cl {
				c.client = nil
			}
			c.mu.Unlock()
			_ = cl.Close()
			return
		case <-c.changed:
			return
		case <-ticker.C:
			pctx, cancel := context.WithTimeout(ctx, c.m.opts.HealthInterval)
			err := cl.Ping(pctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				c.logger().Warn("downstream MCP server stopped answering; reconnecting", "error", err)
				c.markBroken(cl, err)
				<-c.changed
				return
			}
		}
	}
}

func (c *conn) connect(ctx context.Context) (*client.Client, error) {
	cl, err := c.newClient()
	if err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := cl.Start(ictx); err != nil {
		_ = cl.Close()
		return nil, fmt.Errorf("start: %w", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "durawait", Version: "0.1.0"}
	if _, err := cl.Initialize(ictx, init); err != nil {
		_ = cl.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	list, err := cl.ListTools(ictx, mcp.ListToolsRequest{})
	if err != nil {
		_ = cl.Close()
		return nil, fmt.Errorf("list tools: %w", err)
	}
	cl.OnConnectionLost(func(err error) { c.markBroken(cl, err) })

	c.mu.Lock()
	c.client = cl
	c.lastErr = nil
	changed := !sameTools(c.tools, list.Tools)
	c.tools = list.Tools
	c.mu.Unlock()
	// Drop a stale wake-up from the previous connection.
	select {
	case <-c.changed:
	default:
	}
	c.logger().Info("connected to downstream MCP server", "tools", len(list.Tools))
	if changed {
		c.m.notifyToolsChanged()
	}
	return cl, nil
}

func (c *conn) newClient() (*client.Client, error) {
	switch {
	case len(c.cfg.Command) > 0:
		env := make([]string, 0, len(c.cfg.Env))
		for k, v := range c.cfg.Env {
			env = append(env, k+"="+v)
		}
		t := transport.NewStdioWithOptions(c.cfg.Command[0], env, c.cfg.Command[1:],
			transport.WithCommandFunc(stdioCommand),
			transport.WithCommandStderrWriter(&logWriter{logger: c.logger()}),
			transport.WithCommandLogger(c.logger()))
		return client.NewClient(t), nil
	case c.cfg.Transport == TransportSSE:
		return client.NewSSEMCPClient(c.cfg.URL)
	default:
		return client.NewStreamableHttpClient(c.cfg.URL)
	}
}

// stdioCommand starts a stdio server so that it dies with durawait, even on
// kill -9, and does not share durawait's terminal signals.
func stdioCommand(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
	cmd := exec.Command(command, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd, nil
}

// logWriter turns a stdio server's stderr into log lines.
type logWriter struct{ logger *slog.Logger }

func (w *logWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" {
			w.logger.Debug("downstream stderr", "line", line)
		}
	}
	return len(p), nil
}

func sameTools(a, b []mcp.Tool) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
