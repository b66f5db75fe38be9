package downstream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// rawInputSchema and rawOutputSchema are the test server's "raw" tool
// schemas: keys that mcp-go's structured schema types drop ($schema, title)
// or add (required) when they decode and re-encode a schema.
const (
	rawInputSchema  = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","title":"Raw","properties":{"n":{"type":"number","default":3}}}`
	rawOutputSchema = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"sum":{"type":"number"}},"additionalProperties":false}`
)

// testMCPServer is an MCP server with the tools the tests call: "raw"
// (hand-written schemas) and "progress" (three progress notifications to the
// caller's token, then "done").
func testMCPServer() *server.MCPServer {
	s := server.NewMCPServer("helper", "1", server.WithToolCapabilities(false))
	raw := mcp.NewToolWithRawSchema("raw", "A tool with hand-written schemas.", []byte(rawInputSchema))
	raw.RawOutputSchema = []byte(rawOutputSchema)
	s.AddTool(raw, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultStructured(map[string]any{"sum": 3}, `{"sum":3}`), nil
	})
	s.AddTool(mcp.NewTool("progress", mcp.WithDescription("Sends three progress notifications, then answers.")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
				for i := 1; i <= 3; i++ {
					err := server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress", map[string]any{
						"progressToken": req.Params.Meta.ProgressToken, "progress": i, "total": 3, "message": fmt.Sprintf("step %d", i),
					})
					if err != nil {
						return nil, err
					}
				}
			}
			return mcp.NewToolResultText("done"), nil
		})
	return s
}

// httpServer serves testMCPServer over streamable HTTP; it returns the
// server's URL.
func httpServer(t *testing.T) string {
	ts := httptest.NewServer(server.NewStreamableHTTPServer(testMCPServer()))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// sseServer serves testMCPServer over legacy SSE; with flap it ends each SSE
// stream right after it carried the tool list, so every connection is
// accepted and then dropped at once. It returns the SSE URL.
func sseServer(t *testing.T, flap bool) string {
	var sse *server.SSEServer
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !flap {
			sse.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		sse.ServeHTTP(&cutAfterList{ResponseWriter: w, cut: cancel}, r.WithContext(ctx))
	}))
	t.Cleanup(ts.Close)
	sse = server.NewSSEServer(testMCPServer(), server.WithBaseURL(ts.URL))
	return ts.URL + "/sse"
}

// cutAfterList ends an SSE stream once a tools/list result went out on it.
type cutAfterList struct {
	http.ResponseWriter
	cut func()

	mu       sync.Mutex
	sawTools bool
}

func (c *cutAfterList) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.sawTools = c.sawTools || bytes.Contains(p, []byte(`"tools":[`))
	c.mu.Unlock()
	return c.ResponseWriter.Write(p)
}

func (c *cutAfterList) Flush() {
	c.ResponseWriter.(http.Flusher).Flush()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sawTools {
		c.cut()
	}
}

// testLogger discards the manager's logs unless DOWNSTREAM_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("DOWNSTREAM_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// TestMain lets the test binary stand in for a stdio MCP server: started
// with stdioServerEnv set, it serves stdioMain instead of running tests.
func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) != "" {
		stdioMain()
		return
	}
	os.Exit(m.Run())
}

// Environment of the stdio test server.
const (
	// stdioServerEnv makes the test binary a stdio MCP server.
	stdioServerEnv = "DOWNSTREAM_TEST_STDIO_SERVER"
	// stdioDirEnv is a directory where the server counts its incarnations:
	// the n-th process started lists a tool "gen<n>" besides testMCPServer's,
	// so each reconnection changes the tool list.
	stdioDirEnv = "DOWNSTREAM_TEST_STDIO_DIR"
)

// stdioServer configures a server run by the test binary over stdio; its
// tool "die" makes the process exit without answering.
func stdioServer(t *testing.T, name string) ServerConfig {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{stdioServerEnv: "1", stdioDirEnv: t.TempDir()}
	return ServerConfig{Name: name, Command: []string{exe}, Env: env}
}

func stdioMain() {
	s := testMCPServer()
	s.AddTool(mcp.NewTool("die", mcp.WithDescription("Exits the server without answering.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			os.Exit(0)
			return nil, nil
		})
	counter := filepath.Join(os.Getenv(stdioDirEnv), "incarnations")
	prev, _ := os.ReadFile(counter)
	n, _ := strconv.Atoi(string(prev))
	n++
	if err := os.WriteFile(counter, []byte(strconv.Itoa(n)), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s.AddTool(mcp.NewTool(fmt.Sprintf("gen%d", n), mcp.WithDescription("Names the server process's incarnation.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	if err := server.NewStdioServer(s).Listen(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
