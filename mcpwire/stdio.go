package mcpwire

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves s over newline-delimited JSON-RPC on in and out until
// in reaches EOF or ctx ends. Unlike mcp-go's stdio server, which runs at
// most 100 tool calls at once and queues the rest, every request runs on its
// own goroutine: a client may hold any number of waits on one connection.
func ServeStdio(ctx context.Context, s Served, in io.Reader, out io.Writer) error {
	sess := &stdioSession{notifications: make(chan mcp.JSONRPCNotification, 1024)}
	if err := s.MCP.RegisterSession(ctx, sess); err != nil {
		return fmt.Errorf("register stdio session: %w", err)
	}
	defer s.MCP.UnregisterSession(ctx, sess.SessionID())

	ctx, cancel := context.WithCancel(s.MCP.WithContext(ctx, sess))
	defer cancel()
	w := &lineWriter{w: out}

	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case n := <-sess.notifications:
				if err := w.write(n); err != nil {
					s.logger().Warn("stdio: write notification", "error", err)
				}
			case <-ctx.Done():
				return
			}
		}
	})

	ids := &exactIDs{}
	var level atomic.Value // the session's logging/setLevel: mcp.LoggingLevel
	level.Store(mcp.LoggingLevel(""))
	ctx = context.WithValue(ctx, stdioLevelKey{}, &level)
	reader := bufio.NewReaderSize(in, 1<<20)
	var err error
	for {
		line, rerr := reader.ReadBytes('\n')
		if len(line) > 0 {
			dispatchStdio(ctx, s, &wg, w, ids, line)
		}
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) {
				err = fmt.Errorf("read stdin: %w", rerr)
			}
			break
		}
		if ctx.Err() != nil {
			break
		}
	}
	// The client is gone: end its calls (their waits run on) and wait for
	// the handlers to return.
	cancel()
	wg.Wait()
	return err
}

func dispatchStdio(ctx context.Context, s Served, wg *sync.WaitGroup, w *lineWriter, ids *exactIDs, line []byte) {
	if isBatch(line) {
		_ = w.write(batchError())
		return
	}
	msg, ok := parseMessage(line)
	if !ok {
		_ = w.write(mcp.NewJSONRPCError(mcp.NewRequestId(nil), mcp.PARSE_ERROR, "parse error", nil))
		return
	}
	switch {
	case msg.badID():
		_ = w.write(badIDError(msg))
	case len(msg.Method) == 0:
		// A response to a server-to-client request; durawait sends none.
	case !msg.hasID():
		// Notifications (initialized, cancelled) are handled in order; a
		// cancel names a request mcp-go knows by a stand-in id by it.
		s.MCP.HandleMessage(ctx, ids.cancelFor(line, msg, idKey))
	default:
		if resp, refused := utf8Refusal(msg); refused {
			_ = w.write(resp)
			return
		}
		raw := append(json.RawMessage(nil), line...)
		modern := mcp.IsModernProtocol(msg.metaProtocolVersion())
		level, _ := ctx.Value(stdioLevelKey{}).(*atomic.Value)
		if !modern && msg.method == string(mcp.MethodSetLogLevel) && level != nil {
			_ = w.write(setLevelResponse(msg, func(l mcp.LoggingLevel) { level.Store(l) }))
			return
		}
		who := CallerFrom(ctx)
		if modern {
			who.LogLevel = msg.metaLogLevel()
		} else if level != nil {
			who.LogLevel, _ = level.Load().(mcp.LoggingLevel)
		}
		ctx := WithCaller(ctx, who)
		raw, _ = forMCPGo(msg, raw, modern)
		raw, exact := withExactID(msg, raw)
		forget := func() {}
		if exact != nil {
			forget = ids.remember(idKey(msg.ID), exact)
		}
		wg.Go(func() {
			defer forget()
			resp, handled := s.own(ctx, msg, modern)
			if !handled {
				resp = s.MCP.HandleMessage(ctx, raw)
				if exact != nil && resp != nil {
					if b, err := json.Marshal(resp); err == nil {
						resp = json.RawMessage(exact.restore(b))
					}
				}
			}
			if resp != nil {
				if err := w.write(resp); err != nil {
					s.logger().Warn("stdio: write response", "error", err)
				}
			}
		})
	}
}

// stdioLevelKey holds, in a stdio connection's context, the level its
// client set with logging/setLevel.
type stdioLevelKey struct{}

// lineWriter writes one JSON message per line, one writer at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.w.Write(append(b, '\n'))
	return err
}

// stdioSession is the single client session of a stdio connection.
type stdioSession struct {
	notifications chan mcp.JSONRPCNotification
	initialized   atomic.Bool
}

var _ server.ClientSession = (*stdioSession)(nil)

func (s *stdioSession) SessionID() string { return "stdio" }
func (s *stdioSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	return s.notifications
}
func (s *stdioSession) Initialize()       { s.initialized.Store(true) }
func (s *stdioSession) Initialized() bool { return s.initialized.Load() }
