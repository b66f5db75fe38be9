package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeInspectorCommands are the shell commands of the README's
// Inspector block ("Try it with the MCP Inspector's CLI"), each joined
// from its continuation lines, and the README's replacement of the npx
// prefix for a Node older than 22.19 (old, new).
func readmeInspectorCommands(t *testing.T) (cmds []string, old, new string) {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	readme := string(b)
	start := strings.Index(readme, "Try it with the MCP Inspector's CLI")
	require.GreaterOrEqual(t, start, 0, "the README's Inspector block")
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(readme[start:])
	require.NotNil(t, block)
	for _, line := range strings.Split(strings.ReplaceAll(block[1], "\\\n", " "), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			cmds = append(cmds, line)
		}
	}
	swap := regexp.MustCompile("With Node 20, the same lines run on a Node 22 that npm fetches: replace\\s+`([^`]+)` with\\s+`([^`]+)`").
		FindStringSubmatch(readme[start:])
	require.NotNil(t, swap, "the README says how to run the lines on Node 20")
	return cmds, swap[1], swap[2]
}

// nodeOlderThan2219 reports whether the machine's node is older than the
// Inspector's minimum.
func nodeOlderThan2219(t *testing.T) bool {
	out, err := exec.Command("node", "--version").Output()
	require.NoError(t, err, "make test needs Node.js")
	m := regexp.MustCompile(`^v(\d+)\.(\d+)`).FindStringSubmatch(strings.TrimSpace(string(out)))
	require.NotNil(t, m, "node --version: %s", out)
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return major < 22 || (major == 22 && minor < 19)
}

// The README's Inspector lines work as pasted, on a fresh checkout with no
// config of one's own: run from a copy of the repository's layout
// (./bin/durawait, deploy/examples/demo.toml) with a state dir of their
// own, through the pinned Inspector (on this machine's Node, or, older
// than 22.19, the Node 22 the README's replacement fetches), they list
// wait_for and a wait on /tmp/build-status matches. The HTTP line runs
// against a `durawait serve` on that config, on a free port instead of
// make run's 8765.
func TestTheReadmesInspectorLinesWorkAsPasted(t *testing.T) {
	if testing.Short() {
		t.Skip("fetches the Inspector from npm")
	}
	cmds, old, replacement := readmeInspectorCommands(t)
	require.Len(t, cmds, 3, "tools/list and tools/call over stdio, tools/list over HTTP")
	if nodeOlderThan2219(t) {
		for i := range cmds {
			require.Contains(t, cmds[i], old)
			cmds[i] = strings.Replace(cmds[i], old, replacement, 1)
		}
	}

	clone := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(clone, "bin"), 0o755))
	require.NoError(t, os.Symlink(bin.durawait, filepath.Join(clone, "bin", "durawait")))
	require.NoError(t, os.MkdirAll(filepath.Join(clone, "deploy", "examples"), 0o755))
	demo, err := os.ReadFile("../../deploy/examples/demo.toml")
	require.NoError(t, err)
	config := filepath.Join(clone, "deploy", "examples", "demo.toml")
	require.NoError(t, os.WriteFile(config, demo, 0o644))
	// The Inspector passes its server a filtered environment (HOME, PATH,
	// USER...: not XDG_STATE_HOME), so the daemon's state dir is HOME's:
	// a home of the test's own, with npm's cache left where it is.
	npmCache, err := exec.Command("npm", "config", "get", "cache").Output()
	require.NoError(t, err)
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "HOME" && name != "XDG_STATE_HOME" {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+filepath.Join(clone, "home"), "npm_config_cache="+strings.TrimSpace(string(npmCache)))
	t.Cleanup(func() {
		stop := exec.Command(bin.durawait, "stop", "--config", config)
		stop.Env = env
		out, err := stop.CombinedOutput()
		assert.NoError(t, err, "stop the daemon the Inspector lines started: %s", out)
	})
	run := func(line string) string {
		t.Helper()
		cmd := exec.Command("bash", "-c", line)
		cmd.Dir, cmd.Env = clone, env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s\n%s", line, out)
		return string(out)
	}

	assert.Contains(t, run(cmds[0]), `"name": "wait_for"`, "tools/list over stdio")

	require.NoError(t, os.WriteFile("/tmp/build-status", []byte("SUCCESS\n"), 0o644))
	called := run(cmds[1])
	assert.Regexp(t, `"reason\\?":\s*\\?"matched`, called, "tools/call wait_for over stdio")
	assert.NotContains(t, called, `"isError": true`)

	addr := freeAddr(t)
	serve := exec.Command(bin.durawait, "serve", "--config", config, "--http", addr, "--data-dir", filepath.Join(clone, "http-data"),
		"--engine-port", "0", "--no-ui")
	serve.Env = env
	require.NoError(t, serve.Start())
	exited := make(chan struct{})
	go func() { _ = serve.Wait(); close(exited) }()
	t.Cleanup(func() { _ = serve.Process.Kill(); <-exited })
	require.True(t, awaitHealthy(t, addr, exited), "durawait serve on the demo config")
	overHTTP := strings.Replace(cmds[2], "http://127.0.0.1:8765/mcp", "http://"+addr+"/mcp", 1)
	require.NotEqual(t, cmds[2], overHTTP, "the HTTP line names make run's endpoint")
	assert.Contains(t, run(overHTTP), `"name": "wait_for"`, "tools/list over HTTP")
}
