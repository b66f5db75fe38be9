package stdiobridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// endpoint is a small streamable HTTP endpoint for the bridge's unit tests:
// initialize opens session "s<n>", "block" waits until its request is
// aborted, "refuse" is answered with a JSON-RPC error and HTTP 400, and a
// session listed in lost gets 404, as after a server restart.
type endpoint struct {
	initializes atomic.Int64
	aborted     chan string // ids of aborted "block" calls
	blocking    chan string // ids of "block" calls that arrived
	mu          sync.Mutex
	lost        map[string]bool
	gate        chan struct{} // "gated" calls answer once it is closed
}

func newEndpoint(t *testing.T) (*endpoint, string) {
	e := &endpoint{aborted: make(chan string, 8), blocking: make(chan string, 8), lost: map[string]bool{}, gate: make(chan struct{})}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return e, srv.URL + "/mcp"
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	e.mu.Lock()
	lost := e.lost[r.Header.Get("Mcp-Session-Id")]
	e.mu.Unlock()
	switch {
	case msg.Method == "initialize":
		n := e.initializes.Add(1)
		w.Header().Set("Mcp-Session-Id", "s"+strconv.FormatInt(n, 10))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"e","version":"1"}}}`)
	case lost:
		w.WriteHeader(http.StatusNotFound)
	case len(msg.ID) == 0:
		w.WriteHeader(http.StatusAccepted)
	case msg.Method == "block":
		e.blocking <- string(msg.ID)
		<-r.Context().Done()
		e.aborted <- string(msg.ID)
	case msg.Method == "gated":
		e.blocking <- string(msg.ID)
		select {
		case <-e.gate:
		case <-r.Context().Done():
			e.aborted <- string(msg.ID)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{"gated":true}}`)
	case msg.Method == "refuse":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"error":{"code":-32602,"message":"refused: x is wrong"}}`)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{"session":"`+r.Header.Get("Mcp-Session-Id")+`"}}`)
	}
}

// runBridge runs a bridge to url; the test writes the client's lines to
// the returned writer and reads the answers from the returned reader.
func runBridge(t *testing.T, url string) (io.WriteCloser, *bufio.Scanner, <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), inR, outW, Options{Connect: func(context.Context, bool) (string, error) { return url, nil }})
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close() })
	return inW, bufio.NewScanner(outR), done
}

func send(t *testing.T, w io.Writer, line string) {
	t.Helper()
	_, err := io.WriteString(w, line+"\n")
	require.NoError(t, err)
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// The client's notifications/cancelled aborts the POST of the request it
// names; no answer is written for it.
func TestCancelAbortsTheRequest(t *testing.T) {
	e, url := newEndpoint(t)
	in, out, _ := runBridge(t, url)
	send(t, in, initLine)
	require.True(t, out.Scan())
	send(t, in, `{"jsonrpc":"2.0","id":"w-7","method":"block"}`)
	assert.Equal(t, `"w-7"`, <-e.blocking)
	send(t, in, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w-7"}}`)
	select {
	case id := <-e.aborted:
		assert.Equal(t, `"w-7"`, id)
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled request's POST is still open")
	}
	send(t, in, `{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	require.True(t, out.Scan())
	assert.Contains(t, out.Text(), `"id":8`, "the next answer is the ping's; none was written for the cancelled call")
}

// A JSON-RPC error the server answers with an HTTP error status reaches
// the client as the server wrote it.
func TestServerJSONRPCErrorsPassThrough(t *testing.T) {
	_, url := newEndpoint(t)
	in, out, _ := runBridge(t, url)
	send(t, in, initLine)
	require.True(t, out.Scan())
	send(t, in, `{"jsonrpc":"2.0","id":2,"method":"refuse"}`)
	require.True(t, out.Scan())
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"refused: x is wrong"}}`, out.Text())
}

// Requests that find their session lost at once initialize again once,
// and each is answered on the new session.
func TestLostSessionRecoversOnce(t *testing.T) {
	e, url := newEndpoint(t)
	in, out, _ := runBridge(t, url)
	send(t, in, initLine)
	require.True(t, out.Scan())
	e.mu.Lock()
	e.lost["s1"] = true
	e.mu.Unlock()
	const n = 8
	for i := range n {
		send(t, in, `{"jsonrpc":"2.0","id":`+strconv.Itoa(100+i)+`,"method":"echo"}`)
	}
	for range n {
		require.True(t, out.Scan())
		assert.Contains(t, out.Text(), `"session":"s2"`)
	}
	assert.Equal(t, int64(2), e.initializes.Load(), "the first initialize and one recovery")
}

// A client that sends a call and closes stdin still gets its answer (a
// script piping one call), within the grace.
func TestCallsInFlightAtEOFAreAnswered(t *testing.T) {
	e, url := newEndpoint(t)
	in, out, done := runBridge(t, url)
	send(t, in, initLine)
	require.True(t, out.Scan())
	send(t, in, `{"jsonrpc":"2.0","id":9,"method":"gated"}`)
	assert.Equal(t, "9", <-e.blocking)
	require.NoError(t, in.Close())
	close(e.gate)
	require.True(t, out.Scan(), "an answer after stdin's end")
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":9,"result":{"gated":true}}`, out.Text())
	require.NoError(t, <-done)
}

// A session with no endpoint (Connect failed) is refused on every channel a
// client shows: stderr at once, a log notification before the first answer,
// and the reason as the error of every request; notifications get nothing.
// It ends when the client closes stdin, with a RefusedError.
func TestASessionWithNoEndpointIsRefusedInWordsTheClientShows(t *testing.T) {
	reason := errors.New("the durawait daemon on data dir /d runs with another configuration")
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":"b","method":"tools/list"}` + "\n")
	var out, stderr strings.Builder
	err := Run(context.Background(), in, &out, Options{
		Connect: func(context.Context, bool) (string, error) { return "", reason },
		Stderr:  &stderr,
	})
	var refused *RefusedError
	require.ErrorAs(t, err, &refused)
	assert.ErrorIs(t, err, reason)
	assert.Equal(t, "durawait: "+reason.Error()+"\n", stderr.String())

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3, out.String())
	var notice struct {
		Method string `json:"method"`
		Params struct {
			Level, Logger, Data string
		} `json:"params"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &notice))
	assert.Equal(t, "notifications/message", notice.Method)
	assert.Equal(t, "error", notice.Params.Level)
	assert.Equal(t, reason.Error(), notice.Params.Data)
	for i, id := range []string{`1`, `"b"`} {
		var answer struct {
			ID    json.RawMessage `json:"id"`
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(lines[i+1]), &answer))
		assert.Equal(t, id, string(answer.ID))
		assert.Equal(t, codeInternalError, answer.Error.Code)
		assert.Equal(t, reason.Error(), answer.Error.Message)
	}
}
