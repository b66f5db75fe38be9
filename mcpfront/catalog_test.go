package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/workflows"
)

// fakeDownstream is a fixed set of servers and tools, served as Workers.
type fakeDownstream struct {
	order   []string
	tools   map[string][]string // read-only tools by name
	expose  map[string]bool
	lastErr map[string]error
	defs    map[string][]mcp.Tool // full definitions, listed after tools
	policy  probePolicy
	call    func(onProgress func(mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error)
}

// Catalog is the fake's servers as a worker publishes them.
func (f fakeDownstream) Catalog(context.Context) (workflows.DownstreamCatalog, error) {
	cat := workflows.DownstreamCatalog{}
	for _, server := range f.order {
		var defs []mcp.Tool
		for _, name := range f.tools[server] {
			defs = append(defs, mcp.NewTool(name, mcp.WithReadOnlyHintAnnotation(true), mcp.WithDestructiveHintAnnotation(false)))
		}
		defs = append(defs, f.defs[server]...)
		s := workflows.DownstreamServer{Name: server, Expose: f.expose[server], ProbeTools: f.policy[server]}
		if err := f.lastErr[server]; err != nil {
			s.Error = err.Error()
		}
		for _, def := range defs {
			raw, err := json.Marshal(def)
			if err != nil {
				return workflows.DownstreamCatalog{}, err
			}
			s.Tools = append(s.Tools, raw)
		}
		cat.Servers = append(cat.Servers, s)
	}
	return cat, nil
}

func (f fakeDownstream) CallTool(_ context.Context, _ workflows.DownstreamCall, onProgress func(mcp.ProgressNotificationParams)) (workflows.DownstreamCallResult, error) {
	if f.call == nil {
		return workflows.DownstreamCallResult{}, errors.New("not used")
	}
	res, err := f.call(onProgress)
	if err != nil {
		return workflows.DownstreamCallResult{}, err
	}
	raw, err := json.Marshal(res)
	return workflows.DownstreamCallResult{Result: raw}, err
}

func (f fakeDownstream) ListPanes(context.Context, workflows.ListPanesInput) (workflows.ListPanesOutput, error) {
	return workflows.ListPanesOutput{}, errors.New("not used")
}

// catalogOf is the front end's catalog of d's servers, with policy as their
// probe_tools.
func catalogOf(t testing.TB, d fakeDownstream, policy probePolicy) *catalog {
	t.Helper()
	d.policy = policy
	src, err := d.Catalog(context.Background())
	require.NoError(t, err)
	return newCatalog(src, workflows.OwnTools())
}

func exposedNames(c *catalog) []string {
	var names []string
	for n := range c.exposed {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func TestCatalogNamesToolsAndResolvesProbes(t *testing.T) {
	d := fakeDownstream{
		order:   []string{"k8s", "ci", "hidden", "gone"},
		tools:   map[string][]string{"k8s": {"kubectl_get", "logs", "wait_for"}, "ci": {"logs", "job_status"}, "hidden": {"secret_probe", "logs"}},
		expose:  map[string]bool{"k8s": true, "ci": true, "hidden": false, "gone": true},
		lastErr: map[string]error{"gone": errors.New("connection refused")},
	}
	c := catalogOf(t, d, nil)

	assert.Equal(t, []string{"ci.logs", "job_status", "k8s.logs", "k8s.wait_for", "kubectl_get"}, exposedNames(c),
		"shared names and names of native tools are server-qualified; unexposed servers are not listed")

	for name, want := range map[string]string{
		"kubectl_get":      "k8s.kubectl_get",
		"k8s.kubectl_get":  "k8s.kubectl_get",
		"job_status":       "ci.job_status",
		"secret_probe":     "hidden.secret_probe", // probe-only servers can still be probed
		"k8s.wait_for":     "k8s.wait_for",
		"hidden.logs":      "hidden.logs",
		"ci.logs":          "ci.logs",
		"k8s.logs":         "k8s.logs",
		"hidden.secret_pr": "",
	} {
		got, err := c.ResolveProbeTool(name)
		if want == "" {
			assert.Error(t, err, name)
			continue
		}
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
	}

	_, err := c.ResolveProbeTool("wait_for")
	assert.EqualError(t, err, `"wait_for" is one of durawait's own tools; native tools cannot be probed, name a downstream MCP tool`)
	_, err = c.ResolveProbeTool("logs")
	assert.EqualError(t, err, `"logs" is a tool of several downstream servers; name one of k8s.logs, ci.logs, hidden.logs`)
	_, err = c.ResolveProbeTool("nope")
	assert.EqualError(t, err, `no downstream MCP server exposes a tool named "nope"; configured servers: `+
		`k8s (tools: kubectl_get, logs, wait_for); ci (tools: job_status, logs); hidden (tools: logs, secret_probe); gone (not connected: connection refused)`)
}

func TestWaitForIsListedOnlyWithADownstreamServer(t *testing.T) {
	ctx := context.Background()
	list := func(d fakeDownstream) []string {
		f := New(Options{Workers: d})
		resp := f.mcp.HandleMessage(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		res, ok := resp.(mcp.JSONRPCResponse)
		require.True(t, ok, "%#v", resp)
		tools := res.Result.(mcp.ListToolsResult).Tools
		var names []string
		for _, tool := range tools {
			names = append(names, tool.Name)
		}
		sort.Strings(names)
		return names
	}
	// The events need no downstream server: they are always served.
	assert.Equal(t, []string{"post_event", "wait_for_event"}, list(fakeDownstream{}))
	assert.Equal(t, []string{"kubectl_get", "post_event", "wait_for", "wait_for_event"}, list(fakeDownstream{
		order: []string{"k8s"}, tools: map[string][]string{"k8s": {"kubectl_get"}}, expose: map[string]bool{"k8s": true},
	}))
	// A configured server that never connected still makes wait_for available.
	assert.Equal(t, []string{"post_event", "wait_for", "wait_for_event"}, list(fakeDownstream{
		order: []string{"k8s"}, expose: map[string]bool{"k8s": true}, lastErr: map[string]error{"k8s": errors.New("down")},
	}))
}
