package localprobes

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// call calls tool on the probes' MCP server through an in-process client,
// as durawait's downstream manager does, and returns its text and isError.
func call(t *testing.T, p *Probes, tool string, args map[string]any) (string, bool) {
	t.Helper()
	c, err := client.NewInProcessClient(p.Server("test"))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	require.NoError(t, c.Start(ctx))
	_, err = c.Initialize(ctx, mcp.InitializeRequest{})
	require.NoError(t, err)
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(ctx, req)
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	text, ok := res.Content[0].(mcp.TextContent)
	require.True(t, ok)
	return text.Text, res.IsError
}

// answerOf expects an ordinary result.
func answerOf(t *testing.T, p *Probes, tool string, args map[string]any) string {
	t.Helper()
	text, isError := call(t, p, tool, args)
	require.False(t, isError, "an ordinary result, got the error %q", text)
	return text
}

// refusalOf expects an error result.
func refusalOf(t *testing.T, p *Probes, tool string, args map[string]any) string {
	t.Helper()
	text, isError := call(t, p, tool, args)
	require.True(t, isError, "an error result, got %q", text)
	return text
}

// Every probe is annotated read-only (wait_for takes only read-only tools
// as probes unless configured), and run_command is listed only when
// commands are allowed.
func TestTheProbesAreReadOnlyAndRunCommandNeedsCommands(t *testing.T) {
	list := func(p *Probes) map[string]mcp.Tool {
		c, err := client.NewInProcessClient(p.Server("test"))
		require.NoError(t, err)
		defer c.Close()
		require.NoError(t, c.Start(context.Background()))
		_, err = c.Initialize(context.Background(), mcp.InitializeRequest{})
		require.NoError(t, err)
		res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
		require.NoError(t, err)
		tools := map[string]mcp.Tool{}
		for _, tool := range res.Tools {
			tools[tool.Name] = tool
		}
		return tools
	}
	tools := list(New(Policy{}))
	assert.ElementsMatch(t, []string{"http_request", "tcp_connect", "file_stat", "file_read"}, keys(tools))
	for name, tool := range tools {
		require.NotNil(t, tool.Annotations.ReadOnlyHint, name)
		assert.True(t, *tool.Annotations.ReadOnlyHint, name)
		assert.False(t, *tool.Annotations.DestructiveHint, name)
	}
	assert.Contains(t, keys(list(New(Policy{Commands: map[string][]string{"status": {"true"}}}))), "run_command")
}

func keys(m map[string]mcp.Tool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// http_request answers the status line, the headers and the body; a
// server that is not up yet is an ordinary "no response" a wait polls
// again; a HEAD has no body; a body past max_bytes is cut and says so.
func TestHTTPRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Build", "42")
		if r.URL.Path == "/big" {
			fmt.Fprint(w, strings.Repeat("y", 1000))
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"status":"starting"}`)
	}))
	defer srv.Close()
	p := New(Policy{})

	got := answerOf(t, p, "http_request", map[string]any{"url": srv.URL + "/healthz"})
	assert.True(t, strings.HasPrefix(got, "HTTP 503 Service Unavailable\n"), got)
	assert.Contains(t, got, "X-Build: 42\n")
	assert.True(t, strings.HasSuffix(got, "\n\n"+`{"status":"starting"}`), got)

	head := answerOf(t, p, "http_request", map[string]any{"url": srv.URL + "/healthz", "method": "HEAD"})
	assert.True(t, strings.HasSuffix(head, "\n\n"), "no body: %q", head)

	big := answerOf(t, p, "http_request", map[string]any{"url": srv.URL + "/big", "max_bytes": 10})
	assert.True(t, strings.HasSuffix(big, "\n\nyyyyyyyyyy\n(body cut at 10 bytes)"), big)

	closed := closedPort(t)
	down := answerOf(t, p, "http_request", map[string]any{"url": "http://127.0.0.1:" + strconv.Itoa(closed) + "/"})
	assert.Equal(t, "no response: connect: connection refused", down)
}

// A redirect to a host the policy refuses is refused, though the first
// host was allowed: every connection is checked.
func TestARedirectOutOfPolicyIsRefused(t *testing.T) {
	srv := httptest.NewServer(http.RedirectHandler("http://169.254.169.254/latest/meta-data/", http.StatusFound))
	defer srv.Close()
	got := refusalOf(t, New(Policy{}), "http_request", map[string]any{"url": srv.URL})
	assert.Equal(t, "refused: url: 169.254.169.254 is a link-local address (where clouds serve instance metadata): never reached", got)
}

// The policy: loopback by default; another host only when local.hosts
// lists it (a name, a wildcard, an address or a prefix); link-local and
// cloud metadata addresses never, even listed, even behind a name; a name
// is checked by the addresses it resolves to, and a name no entry could
// allow is refused before any DNS query.
func TestThePolicyRefusesWhatItDoesNotList(t *testing.T) {
	resolved := map[string][]netip.Addr{
		"localhost":           {netip.MustParseAddr("127.0.0.1")},
		"metadata.internal":   {netip.MustParseAddr("169.254.169.254")},
		"build.example.test":  {netip.MustParseAddr("192.0.2.10")},
		"rebind.example.test": {netip.MustParseAddr("127.0.0.1")},
	}
	var looked []string
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		looked = append(looked, host)
		if ips, ok := resolved[host]; ok {
			return ips, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	// Connections to addresses beyond loopback are refused here, as by a
	// host that is down: the test reaches no other machine.
	var dialed []string
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialed = append(dialed, addr)
		if host, _, _ := net.SplitHostPort(addr); !netip.MustParseAddr(host).IsLoopback() {
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	policy := func(hosts ...string) *Probes {
		p := New(Policy{Hosts: hosts, Timeout: time.Second})
		p.lookup, p.dialContext = lookup, dial
		return p
	}
	refused := func(p *Probes, host string) string {
		return refusalOf(t, p, "tcp_connect", map[string]any{"host": host, "port": 9})
	}
	assert.Equal(t, "refused: host: 192.0.2.10 is not a loopback address, and local.hosts does not list it", refused(policy(), "192.0.2.10"))
	assert.Equal(t, "refused: host: build.example.test is not localhost, and local.hosts does not list it", refused(policy(), "build.example.test"))
	assert.Equal(t, "refused: host: build.example.test (192.0.2.10) is not a loopback address, and local.hosts does not list it",
		refused(policy("10.0.0.0/8"), "build.example.test"), "a prefix listed: the name is looked up, and its address checked")
	assert.Equal(t, []string{"build.example.test"}, looked, "a name nothing could allow is refused before any DNS query")
	for _, metadata := range []string{"169.254.169.254", "fe80::1", "metadata.internal"} {
		assert.Contains(t, refused(policy("169.254.0.0/16", "fe80::/10", "metadata.internal"), metadata), "is a link-local address",
			"%s: never, whatever local.hosts says", metadata)
	}
	for _, metadata := range []string{"fd00:ec2::254", "100.100.100.200", "168.63.129.16", "192.0.0.192", "64:ff9b::a9fe:a9fe"} {
		assert.Contains(t, refused(policy("0.0.0.0/0", "::/0"), metadata), "is a cloud's instance metadata address: never reached", metadata)
	}
	assert.Contains(t, refused(policy(), "0.0.0.0"), "not a host's address")
	assert.Contains(t, refused(policy(), "::ffff:169.254.169.254"), "link-local", "an IPv4-mapped address is its IPv4 one")

	for _, allowed := range [][2]string{{"192.0.2.0/24", "192.0.2.10"}, {"192.0.2.10", "192.0.2.10"}, {"build.example.test", "build.example.test"}, {"*.example.test", "build.example.test"}} {
		text, isError := call(t, policy(allowed[0]), "tcp_connect", map[string]any{"host": allowed[1], "port": 9})
		assert.False(t, isError, "local.hosts %q allows %s: %s", allowed[0], allowed[1], text)
		assert.Equal(t, "closed "+allowed[1]+":9: connection refused", text)
	}
	assert.Contains(t, dialed, "192.0.2.10:9", "the allowed address itself is dialed")
	for _, loop := range []string{"localhost", "127.0.0.1", "::1"} {
		_, isError := call(t, policy(), "tcp_connect", map[string]any{"host": loop, "port": closedPort(t)})
		assert.False(t, isError, "%s is loopback", loop)
	}
	_, isError := call(t, policy("*.example.test"), "tcp_connect", map[string]any{"host": "rebind.example.test", "port": closedPort(t)})
	assert.False(t, isError, "a listed name that resolves to loopback is loopback")
	unknown := answerOf(t, policy("*.example.test"), "tcp_connect", map[string]any{"host": "nowhere.example.test", "port": 9})
	assert.Contains(t, unknown, "closed nowhere.example.test:9: ", "a listed name that does not resolve yet is not ready, not refused")
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// tcp_connect tells a closed port from an open one, and a port that opens
// later is open at the next call.
func TestTCPConnect(t *testing.T) {
	p := New(Policy{})
	port := closedPort(t)
	assert.Equal(t, fmt.Sprintf("closed 127.0.0.1:%d: connect: connection refused", port), answerOf(t, p, "tcp_connect", map[string]any{"port": port}))
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, fmt.Sprintf("open 127.0.0.1:%d", port), answerOf(t, p, "tcp_connect", map[string]any{"port": port}))

	assert.Equal(t, "port: must be between 1 and 65535, got 70000", refusalOf(t, p, "tcp_connect", map[string]any{"port": 70000}))
	assert.Equal(t, "port: is required", refusalOf(t, p, "tcp_connect", map[string]any{}))
}

// The file probes read only under local.paths (links resolved), say when
// a file does not exist yet, return a file's tail or head within
// max_bytes, and refuse what is not a regular file.
func TestFileProbes(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "status"), []byte("building\nSUCCESS\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("key"), 0o600))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600))

	off := New(Policy{})
	assert.Equal(t, "refused: path: file probes are off: local.paths lists no folder they may read",
		refusalOf(t, off, "file_read", map[string]any{"path": filepath.Join(root, "status")}))

	p := New(Policy{Paths: []string{root}})
	assert.Equal(t, "building\nSUCCESS\n", answerOf(t, p, "file_read", map[string]any{"path": filepath.Join(root, "status")}))
	assert.Equal(t, "SUCCESS\n", answerOf(t, p, "file_read", map[string]any{"path": filepath.Join(root, "status"), "max_bytes": 8}))
	assert.Equal(t, "building", answerOf(t, p, "file_read", map[string]any{"path": filepath.Join(root, "status"), "max_bytes": 8, "from": "head"}))
	assert.Equal(t, "no such file: "+filepath.Join(root, "later"), answerOf(t, p, "file_read", map[string]any{"path": filepath.Join(root, "later")}))
	assert.Equal(t, "exists: false", answerOf(t, p, "file_stat", map[string]any{"path": filepath.Join(root, "later", "deeper")}))

	stat := answerOf(t, p, "file_stat", map[string]any{"path": filepath.Join(root, "status")})
	assert.Contains(t, stat, "exists: true\ntype: file\nsize: 17\nmode: -rw-------\nmtime: ")

	for _, path := range []string{filepath.Join(outside, "secret"), filepath.Join(root, "..", filepath.Base(outside), "secret")} {
		got := refusalOf(t, p, "file_read", map[string]any{"path": path})
		assert.Contains(t, got, "is outside every folder local.paths lists", path)
	}
	assert.Contains(t, refusalOf(t, p, "file_read", map[string]any{"path": filepath.Join(root, "link")}), "leads outside "+root+" by a symbolic link")
	assert.Contains(t, refusalOf(t, p, "file_stat", map[string]any{"path": filepath.Join(root, "link")}), "leads outside "+root+" by a symbolic link")

	// durawait's own data dir is never read, even inside an allowed folder
	// and even through a link that stays inside it.
	data := filepath.Join(root, "data")
	require.NoError(t, os.MkdirAll(data, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(data, "client-key.pem"), []byte("KEY"), 0o600))
	require.NoError(t, os.Symlink(filepath.Join("data", "client-key.pem"), filepath.Join(root, "innocent"))) // relative: it stays inside root
	guarded := New(Policy{Paths: []string{root}, Deny: []string{data}})
	for _, path := range []string{filepath.Join(data, "client-key.pem"), filepath.Join(root, "innocent")} {
		assert.Contains(t, refusalOf(t, guarded, "file_read", map[string]any{"path": path}), "is inside "+data+", durawait's own data: never read", path)
		assert.Contains(t, refusalOf(t, guarded, "file_stat", map[string]any{"path": path}), "durawait's own data", path)
	}
	assert.Equal(t, "building\nSUCCESS\n", answerOf(t, guarded, "file_read", map[string]any{"path": filepath.Join(root, "status")}))

	// Invalid UTF-8 never makes a result longer than the bytes read.
	binary := bytes.Repeat([]byte{0xff, 'a'}, 1000)
	require.NoError(t, os.WriteFile(filepath.Join(root, "binary"), binary, 0o600))
	text := answerOf(t, p, "file_read", map[string]any{"path": filepath.Join(root, "binary")})
	assert.Len(t, text, len(binary))
	assert.True(t, utf8.ValidString(text))
	assert.Contains(t, refusalOf(t, p, "file_stat", map[string]any{"path": "status"}), `path: "status" must be an absolute path`)
	assert.Contains(t, refusalOf(t, p, "file_read", map[string]any{"path": filepath.Join(root, "fifo")}), "is a fifo, not a regular file")
	assert.Contains(t, refusalOf(t, p, "file_read", map[string]any{"path": root}), "is a directory, not a regular file")
	assert.Equal(t, "max_bytes: must be between 1 and 196608, got 1000000",
		refusalOf(t, p, "file_read", map[string]any{"path": filepath.Join(root, "status"), "max_bytes": 1000000}))
	assert.Equal(t, `from: must be one of head, tail, got "middle"`,
		refusalOf(t, p, "file_read", map[string]any{"path": filepath.Join(root, "status"), "from": "middle"}))
}

// run_command runs only a command local.commands names, as configured;
// it answers its exit status and the tail of its output, and kills it at
// the timeout.
func TestRunCommand(t *testing.T) {
	p := New(Policy{Timeout: time.Second, Commands: map[string][]string{
		"ok":    {"sh", "-c", "echo ready"},
		"fails": {"sh", "-c", "echo not yet >&2; exit 3"},
		"loud":  {"sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x; echo END"},
		"hangs": {"sh", "-c", "sleep 60"},
	}})
	assert.Equal(t, "exit: 0\nready\n", answerOf(t, p, "run_command", map[string]any{"name": "ok"}))
	assert.Equal(t, "exit: 3\nnot yet\n", answerOf(t, p, "run_command", map[string]any{"name": "fails"}))
	loud := answerOf(t, p, "run_command", map[string]any{"name": "loud"})
	assert.True(t, strings.HasPrefix(loud, "exit: 0\n(the first 34468 bytes of output cut)\n"), loud[:80])
	assert.True(t, strings.HasSuffix(loud, "xxxEND\n"))
	assert.Equal(t, "exit: timeout (killed after 1s)\n", answerOf(t, p, "run_command", map[string]any{"name": "hangs"}))
	assert.Equal(t, `refused: name: "rm" is not a command local.commands allows (allowed: fails, hangs, loud, ok)`,
		refusalOf(t, p, "run_command", map[string]any{"name": "rm"}))
}
