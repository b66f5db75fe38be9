// Package stdiobridge connects an MCP client that speaks newline-delimited
// JSON-RPC on stdio to a streamable HTTP MCP endpoint, so that many stdio
// sessions can share one server process. Each request is POSTed on its own
// goroutine (a client may hold many waits at once), notifications in order;
// answers, JSON or SSE, are written back one message per line.
package stdiobridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Options configure a bridge.
type Options struct {
	// Connect returns the MCP endpoint URL. It is called once at start, and
	// with restart true when the endpoint refused a connection: the server
	// is gone and must be started again.
	Connect func(ctx context.Context, restart bool) (string, error)
	// Client sends the HTTP requests; nil uses a client without proxy or
	// timeout (calls may last minutes).
	Client *http.Client
	// Logger gets the bridge's own diagnostics; nil discards them.
	Logger *slog.Logger
	// Stderr, when set, gets the reason a session is refused, in plain
	// words, the moment it is (see RefusedError).
	Stderr io.Writer
}

// Bridge is one stdio session bridged to the endpoint.
type Bridge struct {
	opts Options
	out  *lineWriter

	mu      sync.Mutex
	url     string
	session string // Mcp-Session-Id, empty for a stateless server
	version string // the protocol version negotiated in initialize
	initReq []byte // the client's initialize request, replayed after a lost session
	listen  context.CancelFunc
	gen     int // bumped at each (re-)initialize
	wg      sync.WaitGroup

	// recovering makes recovery single-flight: one request restarts the
	// server and initializes again, the others then retry on the result.
	recovering sync.Mutex
	// requests counts the requests in flight.
	requests sync.WaitGroup
	// inFlight holds the cancel function of each request in flight, by
	// its raw id, so that the client's notifications/cancelled ends it.
	inFlight sync.Map
}

// Run bridges in and out to the endpoint until in reaches EOF or ctx ends.
// Calls in flight then are cancelled (their waits run on in the server) and
// the session is ended.
func Run(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	if opts.Client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil
		opts.Client = &http.Client{Transport: tr}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	url, err := opts.Connect(ctx, false)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return refuse(ctx, in, &lineWriter{w: out}, opts, err)
	}
	b := &Bridge{opts: opts, out: &lineWriter{w: out}, url: url}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	lines, readDone := readLines(ctx, in)
	var readErr error
loop:
	for {
		select {
		case line := <-lines:
			b.dispatch(ctx, line)
		case err := <-readDone:
			if err != nil {
				readErr = fmt.Errorf("read stdin: %w", err)
				break loop
			}
			// The client sent all it will: answer what it asked, for a
			// while (a script that pipes one call and closes stdin), then
			// end the calls still waiting (their waits run on).
			b.finish(ctx, eofGrace)
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	cancel()
	b.wg.Wait()
	b.endSession()
	return readErr
}

// readLines reads in's non-empty lines on a goroutine of its own (a read
// from stdin cannot be interrupted, and ctx may end, a signal, while it
// blocks). At in's end, or a read error, readDone gets nil or the error.
func readLines(ctx context.Context, in io.Reader) (lines <-chan []byte, readDone <-chan error) {
	out := make(chan []byte)
	done := make(chan error, 1)
	go func() {
		reader := bufio.NewReaderSize(in, 1<<20)
		for {
			line, rerr := reader.ReadBytes('\n')
			if line = bytes.TrimSpace(line); len(line) > 0 {
				select {
				case out <- line:
				case <-ctx.Done():
					return
				}
			}
			if rerr != nil {
				if errors.Is(rerr, io.EOF) {
					rerr = nil
				}
				done <- rerr
				return
			}
		}
	}()
	return out, done
}

// RefusedError is Run's error when the session had no endpoint to bridge
// to (Connect failed: the daemon runs with another configuration, or could
// not start). The reason was written to Options.Stderr when it happened;
// Error does not repeat it.
type RefusedError struct {
	Reason error
	// Told: the reason was written to Options.Stderr.
	Told bool
}

func (e *RefusedError) Error() string {
	if e.Told {
		return "durawait refused this MCP session (the reason is above)"
	}
	return "durawait refused this MCP session: " + e.Reason.Error()
}

func (e *RefusedError) Unwrap() error { return e.Reason }

// refuse serves a session that has no endpoint: the reason goes to stderr
// at once (a client's log of its server's stderr), to the client as a log
// notification (level error) before its first answer, and as the JSON-RPC
// error of every request, until the client closes stdin or ctx ends. A
// client then shows why the server failed instead of a server that exited
// without a word on the protocol, or one that lists no tools.
func refuse(ctx context.Context, in io.Reader, out *lineWriter, opts Options, reason error) error {
	if opts.Stderr != nil {
		fmt.Fprintf(opts.Stderr, "durawait: %v\n", reason)
	}
	lines, readDone := readLines(ctx, in)
	told := false
	for {
		select {
		case line := <-lines:
			h, err := parseHead(line)
			if err != nil {
				if err := out.write(errorResponse(nil, codeParseError, "parse error: "+err.Error())); err != nil {
					opts.Logger.Warn("bridge: write to stdout", "error", err)
				}
				continue
			}
			if !h.isRequest() {
				continue // notifications and responses need no answer
			}
			if !told {
				told = true
				if err := out.write(refusalNotice(reason)); err != nil {
					opts.Logger.Warn("bridge: write to stdout", "error", err)
				}
			}
			if err := out.write(errorResponse(h.ID, codeInternalError, reason.Error())); err != nil {
				opts.Logger.Warn("bridge: write to stdout", "error", err)
			}
		case err := <-readDone:
			if err != nil {
				opts.Logger.Warn("bridge: read stdin", "error", err)
			}
			return &RefusedError{Reason: reason, Told: opts.Stderr != nil}
		case <-ctx.Done():
			return &RefusedError{Reason: reason, Told: opts.Stderr != nil}
		}
	}
}

// eofGrace is how long the requests in flight at stdin's end may still be
// answered.
const eofGrace = 10 * time.Second

// finish waits until the requests in flight are answered, grace passes,
// or ctx ends.
func (b *Bridge) finish(ctx context.Context, grace time.Duration) {
	done := make(chan struct{})
	go func() { b.requests.Wait(); close(done) }()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// dispatch sends one message from the client.
func (b *Bridge) dispatch(ctx context.Context, line []byte) {
	if line[0] == '[' {
		b.write(errorResponse(nil, codeInvalidRequest, "JSON-RPC batches (a JSON array) are not supported by MCP: send one message per line"))
		return
	}
	h, err := parseHead(line)
	if err != nil {
		b.write(errorResponse(nil, codeParseError, "parse error: "+err.Error()))
		return
	}
	if mcp.IsModernProtocol(h.ProtocolVersion) {
		// A client of the stateless era: it has no session, and its
		// notifications, which may carry no version, are of its era.
		b.mu.Lock()
		if b.session == "" {
			b.version = h.ProtocolVersion
		}
		b.mu.Unlock()
	}
	switch {
	case h.Method == "initialize" && h.ID != nil:
		// In order: later messages need the session it creates.
		b.initialize(ctx, line, h)
	case h.isRequest():
		rctx, cancel := context.WithCancel(ctx)
		key := string(bytes.TrimSpace(h.ID))
		b.inFlight.Store(key, cancel)
		b.requests.Add(1)
		b.wg.Go(func() {
			defer b.requests.Done()
			defer cancel()
			defer b.inFlight.Delete(key)
			b.request(rctx, line, h)
		})
	default:
		// Notifications (initialized, cancelled) and responses, in order.
		if err := b.forward(ctx, line, h, b.write); err != nil {
			b.opts.Logger.Warn("bridge: forward message", "method", h.Method, "error", err)
		}
		if h.Method == "notifications/cancelled" {
			// The client gave up on the request: stop waiting for its
			// answer (its wait runs on in the daemon).
			if cancel, ok := b.inFlight.Load(string(bytes.TrimSpace(cancelledID(line)))); ok {
				cancel.(context.CancelFunc)()
			}
		}
	}
}

func (b *Bridge) write(msg []byte) {
	if err := b.out.write(msg); err != nil {
		b.opts.Logger.Warn("bridge: write to stdout", "error", err)
	}
}

// initialize forwards the client's initialize and keeps what the session
// needs: its ID, the negotiated version, and the request for a replay.
func (b *Bridge) initialize(ctx context.Context, line []byte, h head) {
	b.mu.Lock()
	b.initReq = bytes.Clone(line)
	b.mu.Unlock()
	b.request(ctx, line, h)
}

// request forwards a request and writes every message of its answer, or a
// JSON-RPC error saying why there is none.
func (b *Bridge) request(ctx context.Context, line []byte, h head) {
	if err := b.forward(ctx, line, h, b.write); err != nil {
		if ctx.Err() != nil {
			return // the client is gone; nobody reads an answer
		}
		b.write(errorResponse(h.ID, codeInternalError, err.Error()))
	}
}

// forward POSTs a message, recovering once from a server that is gone
// (restart it) or a session it lost (initialize again), and hands each
// message of the answer to deliver.
func (b *Bridge) forward(ctx context.Context, line []byte, h head, deliver func([]byte)) error {
	for attempt := 0; ; attempt++ {
		st := b.state()
		resp, err := b.post(ctx, st, line, h)
		switch {
		case err != nil && attempt == 0 && errors.Is(err, syscall.ECONNREFUSED):
			b.opts.Logger.Warn("bridge: the durawait daemon is gone; starting it again", "url", st.url)
			if rerr := b.recover(ctx, st, true); rerr != nil {
				return fmt.Errorf("the durawait daemon at %s is gone and could not be started again: %w", st.url, rerr)
			}
			continue
		case err != nil:
			return fmt.Errorf("send to the durawait daemon at %s: %w", st.url, err)
		}
		if resp.StatusCode == http.StatusNotFound && st.session != "" && h.Method != "initialize" && attempt == 0 {
			resp.Body.Close()
			b.opts.Logger.Warn("bridge: the daemon lost the session; initializing again", "session", st.session)
			if rerr := b.recover(ctx, st, false); rerr != nil {
				return fmt.Errorf("the durawait daemon lost this session (it restarted) and initializing again failed: %w", rerr)
			}
			continue
		}
		return b.answer(ctx, resp, h, deliver)
	}
}

// answer reads the server's answer to one POST.
func (b *Bridge) answer(ctx context.Context, resp *http.Response, h head, deliver func([]byte)) error {
	defer resp.Body.Close()
	if h.Method == "initialize" && resp.StatusCode/100 == 2 {
		inner := deliver
		deliver = func(msg []byte) {
			if v, ok := initializeResult(msg); ok {
				b.initialized(ctx, resp.Header.Get("Mcp-Session-Id"), v)
			}
			inner(msg)
		}
	}
	switch {
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
		return nil
	case resp.StatusCode/100 != 2:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if isJSONRPCAnswer(body) {
			// The server's own JSON-RPC error (a refused request): the
			// client gets it as it is.
			deliver(bytes.TrimSpace(body))
			return nil
		}
		return fmt.Errorf("the durawait daemon answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		got := false
		err := readSSE(resp.Body, func(data []byte) {
			got = true
			deliver(data)
		})
		if err != nil && h.isRequest() && ctx.Err() == nil {
			return fmt.Errorf("the connection to the durawait daemon broke during the call (%v); call again: a wait runs on in the daemon", err)
		}
		if !got && h.isRequest() {
			return errors.New("the durawait daemon closed the call's stream without an answer; call again")
		}
		return nil
	default:
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return fmt.Errorf("read the durawait daemon's answer: %w", err)
		}
		if len(bytes.TrimSpace(body)) > 0 {
			deliver(body)
		}
		return nil
	}
}

// state is a snapshot of the session.
type state struct {
	url, session, version string
	gen                   int
}

func (b *Bridge) state() state {
	b.mu.Lock()
	defer b.mu.Unlock()
	return state{url: b.url, session: b.session, version: b.version, gen: b.gen}
}

// post sends one message with the session's headers.
func (b *Bridge) post(ctx context.Context, st state, line []byte, h head) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.url, bytes.NewReader(line))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if st.session != "" && h.Method != "initialize" {
		req.Header.Set("Mcp-Session-Id", st.session)
	}
	version := st.version
	if h.ProtocolVersion != "" {
		version = h.ProtocolVersion
	}
	if version != "" && h.Method != "initialize" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	for k, v := range standardHeaders(version, h) {
		req.Header.Set(k, v)
	}
	return b.opts.Client.Do(req)
}

// standardHeaders are the headers a 2026-07-28 request must carry on
// streamable HTTP (SEP-2243), which a stdio client does not send:
// Mcp-Method, and Mcp-Name for a tool's call (its name) and a task's
// request (its task ID, as the tasks extension routes it). None for an
// earlier version. (A re-exposed tool whose parameters are annotated
// x-mcp-header would need its Mcp-Param-* headers too, which only its
// schema names; durawait's own tools have none.)
func standardHeaders(version string, h head) map[string]string {
	headers := mcp.StandardHeaders(version, mcp.MCPMethod(h.Method), h.Params)
	if headers == nil || h.Method == "" {
		return nil
	}
	switch h.Method {
	case "tasks/get", "tasks/update", "tasks/cancel":
		var p struct {
			TaskID string `json:"taskId"`
		}
		if json.Unmarshal(h.Params, &p) == nil && p.TaskID != "" {
			if encoded, ok := mcp.EncodeHeaderValue(p.TaskID); ok {
				headers[mcp.HeaderName] = encoded
			}
		}
	}
	return headers
}

// initialized records a new session and opens its notification stream.
func (b *Bridge) initialized(ctx context.Context, session, version string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.session, b.version = session, version
	b.gen++
	if b.listen != nil {
		b.listen()
		b.listen = nil
	}
	if session == "" {
		return
	}
	lctx, cancel := context.WithCancel(ctx)
	b.listen = cancel
	st := state{url: b.url, session: session, version: version, gen: b.gen}
	b.wg.Go(func() { b.listenLoop(lctx, st) })
}

// recover brings the session back after a failure seen in state st: it
// restarts the server when restart is set, then replays the client's
// initialize (and initialized). Concurrent callers that saw the same
// failure recover once.
func (b *Bridge) recover(ctx context.Context, st state, restart bool) error {
	b.recovering.Lock()
	defer b.recovering.Unlock()
	b.mu.Lock()
	if b.gen != st.gen || b.url != st.url {
		b.mu.Unlock()
		return nil // another request recovered meanwhile: retry on its result
	}
	initReq := b.initReq
	b.mu.Unlock()
	if restart {
		url, err := b.opts.Connect(ctx, true)
		if err != nil {
			return err
		}
		b.mu.Lock()
		b.url = url
		b.mu.Unlock()
	}
	if initReq == nil {
		return nil // not initialized yet, or a stateless client: nothing to replay
	}
	replay, err := replaceID(initReq, `"durawait-bridge-reinitialize"`)
	if err != nil {
		return err
	}
	h := head{ID: []byte(`"durawait-bridge-reinitialize"`), Method: "initialize"}
	failure := errors.New("no answer to initialize")
	// Sent once, without recovery of its own: this is the recovery.
	err = b.send(ctx, b.state(), replay, h, func(msg []byte) {
		if _, ok := initializeResult(msg); ok {
			failure = nil
		} else {
			failure = fmt.Errorf("initialize refused: %s", msg)
		}
	})
	if err == nil {
		err = failure
	}
	if err != nil {
		return err
	}
	note := []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return b.send(ctx, b.state(), note, head{Method: "notifications/initialized"}, func([]byte) {})
}

// send POSTs a message once and hands each message of the answer to
// deliver.
func (b *Bridge) send(ctx context.Context, st state, line []byte, h head, deliver func([]byte)) error {
	resp, err := b.post(ctx, st, line, h)
	if err != nil {
		return fmt.Errorf("send to the durawait daemon at %s: %w", st.url, err)
	}
	return b.answer(ctx, resp, h, deliver)
}

// listenLoop holds the session's standalone GET stream open for server
// notifications (tools/list_changed), answering the server's pings itself,
// and reopens it after a drop until ctx ends or the session is gone.
func (b *Bridge) listenLoop(ctx context.Context, st state) {
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, st.url, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", st.session)
		req.Header.Set("Mcp-Protocol-Version", st.version)
		resp, err := b.opts.Client.Do(req)
		if err == nil {
			if resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				return // no stream for this session (405), or the session is gone (404)
			}
			_ = readSSE(resp.Body, func(data []byte) { b.serverMessage(ctx, st, data) })
			resp.Body.Close()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// serverMessage handles a message on the GET stream: a ping is answered
// here (it keeps the bridge's connection alive, not the client's), the
// rest goes to the client.
func (b *Bridge) serverMessage(ctx context.Context, st state, data []byte) {
	h, err := parseHead(data)
	if err == nil && h.Method == "ping" && h.ID != nil {
		pong := []byte(`{"jsonrpc":"2.0","id":` + string(h.ID) + `,"result":{}}`)
		resp, err := b.post(ctx, st, pong, head{})
		if err == nil {
			resp.Body.Close()
		}
		return
	}
	b.write(data)
}

// endSession tells the server the session is over (best effort).
func (b *Bridge) endSession() {
	st := b.state()
	if st.session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, st.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", st.session)
	req.Header.Set("Mcp-Protocol-Version", st.version)
	if resp, err := b.opts.Client.Do(req); err == nil {
		resp.Body.Close()
	}
}
