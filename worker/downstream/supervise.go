package downstream

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// setupTimeout bounds one connection's set-up: starting the transport,
// initialize and the tool listing.
const setupTimeout = 30 * time.Second

// supervise keeps the connection up until ctx ends.
func (c *conn) supervise(ctx context.Context) {
	policy := newRetryPolicy(c.m.opts)
	first := true
	for ctx.Err() == nil {
		// The connection lives on its own context: it ends when the
		// connection is superseded or the manager stops, never when the
		// set-up's bound passes.
		live, end := context.WithCancel(ctx)
		cl, err := c.connect(ctx, live)
		if first {
			c.m.ready.Done()
			first = false
		}
		if err != nil {
			end()
			c.mu.Lock()
			wasOK := c.lastErr == nil
			c.lastErr = err
			c.mu.Unlock()
			if wasOK {
				c.m.notifyChanged() // unavailable now
			}
			delay := policy.failed()
			c.logger().Warn("downstream MCP server unavailable; retrying", "error", err, "retry_in", delay)
			if !c.m.sleep(ctx, delay) {
				return
			}
			continue
		}
		began := c.m.now()
		c.watch(ctx, cl)
		end()
		if ctx.Err() != nil {
			return
		}
		delay := policy.ended(c.m.now().Sub(began))
		c.logger().Info("reconnecting to downstream MCP server", "retry_in", delay)
		if !c.m.sleep(ctx, delay) {
			return
		}
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

// connect starts a client whose transport lives as long as live, and
// initializes it and lists its tools within setupTimeout (or until ctx ends).
func (c *conn) connect(ctx, live context.Context) (*client.Client, error) {
	cl, rec, err := c.newClient()
	if err != nil {
		return nil, err
	}
	cl.OnNotification(c.m.progress.deliver)
	// A connection can be lost during set-up, before it is current: lost
	// keeps that news until connect can act on it.
	lost := make(chan error, 1)
	cl.OnConnectionLost(func(err error) {
		select {
		case lost <- err:
		default:
		}
		c.markBroken(cl, err)
	})
	if err := cl.Start(live); err != nil {
		_ = cl.Close()
		return nil, fmt.Errorf("start: %w", err)
	}
	setup, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "durawait", Version: "0.1.0"}
	if _, err := cl.Initialize(setup, init); err != nil {
		_ = cl.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	list, err := cl.ListTools(setup, mcp.ListToolsRequest{})
	if err != nil {
		_ = cl.Close()
		return nil, fmt.Errorf("list tools: %w", err)
	}
	rec.apply(list.Tools)

	// Drop a stale wake-up from the previous connection, then make this one
	// current; from here on markBroken acts on it.
	select {
	case <-c.changed:
	default:
	}
	c.mu.Lock()
	c.client = cl
	changed := !sameTools(c.tools, list.Tools) || c.lastErr != nil
	c.lastErr = nil
	c.tools = list.Tools
	c.mu.Unlock()
	select {
	case err := <-lost:
		c.markBroken(cl, err) // lost while it was being set up
	default:
	}
	c.logger().Info("connected to downstream MCP server", "tools", len(list.Tools))
	if changed {
		c.m.notifyChanged()
	}
	return cl, nil
}

// newClient builds a client for the server's transport, and the recorder of
// the raw tool schemas it receives.
func (c *conn) newClient() (*client.Client, *schemaRecorder, error) {
	rec := &schemaRecorder{}
	switch {
	case c.cfg.InProcess != nil:
		t := transport.NewInProcessTransport(c.cfg.InProcess)
		return client.NewClient(recordingInProcess{InProcessTransport: t, rec: rec}), rec, nil
	case len(c.cfg.Command) > 0:
		env := ServerEnv(os.Environ(), c.cfg.Inherit, c.cfg.Env)
		t := transport.NewStdioWithOptions(c.cfg.Command[0], env, c.cfg.Command[1:],
			transport.WithCommandFunc(stdioCommand),
			transport.WithCommandStderrWriter(&logWriter{logger: c.logger()}),
			transport.WithCommandLogger(c.logger()))
		return client.NewClient(recordingStdio{Stdio: t, rec: rec}), rec, nil
	case c.cfg.Transport == TransportSSE:
		t, err := transport.NewSSE(c.cfg.URL)
		if err != nil {
			return nil, nil, fmt.Errorf("SSE transport: %w", err)
		}
		return client.NewClient(recordingSSE{SSE: t, rec: rec}), rec, nil
	default:
		t, err := transport.NewStreamableHTTP(c.cfg.URL)
		if err != nil {
			return nil, nil, fmt.Errorf("streamable HTTP transport: %w", err)
		}
		return client.NewClient(recordingHTTP{StreamableHTTP: t, rec: rec}), rec, nil
	}
}

// stdioCommand starts a stdio server in its own process group (it does not
// share durawait's terminal signals) so that it dies with durawait: on
// Linux even on kill -9 (stdioProcAttr says how on other systems). env is
// its whole environment (see ServerEnv).
func stdioCommand(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
	cmd := exec.Command(command, args...)
	cmd.Env = env
	cmd.SysProcAttr = stdioProcAttr()
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

// sleep waits for d or until ctx ends; it reports whether d passed.
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
