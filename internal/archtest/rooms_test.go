// Package archtest holds the tests of durawait's architecture: which room
// (package) may import which (docs/architecture.md); and that the docs
// hold no line saying something is not done yet.
package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/durawait/durawait"

// imports returns the non-test imports of the package in the repository
// folder dir (relative to the module root).
func imports(t *testing.T, dir string) []string {
	t.Helper()
	root := filepath.Join("..", "..", dir)
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatalf("read package %s: %v", dir, err)
	}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("parse %s/%s: %v", dir, name, err)
		}
		for _, spec := range f.Imports {
			path, _ := strconv.Unquote(spec.Path.Value)
			seen[path] = true
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// closure returns every package that dir imports, directly or through other
// packages of this module.
func closure(t *testing.T, dir string) []string {
	t.Helper()
	all := map[string]bool{}
	queue := []string{dir}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		for _, p := range imports(t, d) {
			if all[p] {
				continue
			}
			all[p] = true
			if rest, ok := strings.CutPrefix(p, module+"/"); ok {
				queue = append(queue, rest)
			}
		}
	}
	out := make([]string, 0, len(all))
	for p := range all {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// The rooms and what they may not reach, even through another package.
func TestRoomsImportOnlyWhatTheyMay(t *testing.T) {
	for _, tc := range []struct {
		room   string
		reason string
		banned func(path string) bool
	}{
		{"mcpfront", "the front end does no side effect: it reaches the workers through Temporal (or worker.Local, wired by cmd)",
			prefixOf(module+"/activities", module+"/worker", module+"/internal/config", "os/exec")},
		{"mcpwire", "the MCP wire knows no tool, no workflow and no Temporal: the tools hand it their mcp-go server",
			prefixOf(module+"/", "go.temporal.io")},
		{"workflows", "workflows are deterministic and free of I/O",
			prefixOf(module+"/", "os", "net", "io/fs", "time/tzdata", "math/rand", "crypto/rand", "github.com/mark3labs")},
		{"internal/config", "config knows no activity: cmd maps it onto each package's options",
			prefixOf(module+"/activities", module+"/worker", module+"/mcpfront")},
		{"activities", "activities know no TOML and no front end",
			prefixOf(module+"/internal/config", module+"/mcpfront", module+"/worker", "github.com/BurntSushi/toml")},
		{"worker", "the worker wires workflows and activities; it serves no MCP",
			prefixOf(module+"/mcpfront", module+"/internal/config")},
		{"worker/downstream", "the downstream manager is a worker's part: it knows no front end and no TOML",
			prefixOf(module+"/mcpfront", module+"/internal/config", "github.com/BurntSushi/toml")},
		{"internal/localprobes", "the built-in probes are an MCP server of the machine: they know no worker, no workflow and no TOML",
			prefixOf(module+"/activities", module+"/worker", module+"/mcpfront", module+"/internal/config", module+"/workflows", "github.com/BurntSushi/toml")},
		{"worker/hosting", "a worker's hosts (leases, loops, adoption) know no front end and no TOML",
			prefixOf(module+"/mcpfront", module+"/internal/config", module+"/worker/downstream", "github.com/BurntSushi/toml")},
	} {
		t.Run(tc.room, func(t *testing.T) {
			for _, p := range closure(t, tc.room) {
				if tc.banned(p) {
					t.Errorf("%s reaches %s: %s", tc.room, p, tc.reason)
				}
			}
		})
	}
}

// The leaves: small packages that the roles share, which reach no
// package of the module but, where they need its vocabulary, workflows.
func TestLeavesImportNoModulePackageButWorkflows(t *testing.T) {
	for _, tc := range []struct{ room, reason string }{
		{"internal/callevents", "the tool-call events hub and stream: the front end fills the events"},
		{"internal/telemetry", "the OpenTelemetry providers: every role sets them up, none is reached"},
		{"internal/readiness", "the /readyz checks: they read Temporal, nothing of durawait's"},
		{"internal/namespace", "the namespace setup: Temporal's API only"},
		{"internal/waits", "`durawait waits` reads the wait workflows' records, in workflows' vocabulary"},
		{"internal/enginecreds", "the engine's certificates: files and crypto only"},
		{"internal/webui", "the Web UI's gate: HTTP only"},
		{"internal/childenv", "a child process's environment: strings only"},
		{"internal/probepolicy", "which tools may be probed: MCP's tool annotations only"},
		{"internal/samplehub", "the in-process event hub: it carries workflows.WaitEvent"},
		{"internal/eventlatch", "an event's latch reached from outside: Temporal's client and workflows' names only"},
		{"internal/hooks", "the hooks' secrets: files and crypto only"},
		{"internal/temporalconn", "how to reach Temporal: the SDK's envconfig, flags and TOML values handed in"},
		{"internal/datadir", "the data dir and its lock: files only"},
		{"internal/auth", "callers' credentials: tokens and JWTs only"},
		{"internal/stdiobridge", "the stdio bridge: JSON-RPC lines to an HTTP endpoint"},
		{"internal/agentproc", "the agent supervisor: processes only"},
	} {
		t.Run(tc.room, func(t *testing.T) {
			for _, p := range closure(t, tc.room) {
				if strings.HasPrefix(p, module+"/") && p != module+"/workflows" {
					t.Errorf("%s reaches %s: it is a leaf (%s)", tc.room, p, tc.reason)
				}
			}
		})
	}
}

// prefixOf matches an import path equal to, or under, one of prefixes
// (a prefix ending in "/" matches everything under it).
func prefixOf(prefixes ...string) func(string) bool {
	return func(path string) bool {
		for _, p := range prefixes {
			if path == p || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/") {
				return true
			}
		}
		return false
	}
}
