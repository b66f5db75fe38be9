package mcpfront

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Downstream is the set of downstream MCP servers durawait re-exposes and
// probes. The worker's connection manager implements it.
type Downstream interface {
	// ServerNames lists the configured servers.
	ServerNames() []string
	// ServerTools returns a server's tools as last listed, whether it is
	// connected now, its last connection error, and its expose setting.
	ServerTools(server string) (tools []mcp.Tool, expose bool, lastErr error)
	// CallTool forwards one call. When onProgress is not nil, it receives
	// each progress notification the server sends for the call.
	CallTool(ctx context.Context, server, tool string, args any, onProgress func(mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error)
}

// toolRef names one downstream tool.
type toolRef struct {
	Server string
	Def    mcp.Tool
}

func (r toolRef) canonical() string { return r.Server + "." + r.Def.Name }

// catalog is a snapshot of the downstream tools with the names durawait
// exposes them under.
type catalog struct {
	native  map[string]bool
	servers []string
	byTool  map[string][]toolRef // tool name -> the servers that have it
	byCanon map[string]toolRef   // "<server>.<tool>" -> tool
	down    map[string]error     // servers with no tools and a connection error
	exposed map[string]toolRef   // exposed name -> tool
	policy  ProbePolicy
	schemas map[string]*jsonschema.Schema // "<server>.<tool>" -> compiled input schema
}

// newCatalog snapshots d. A tool is exposed under its own name unless two
// exposing servers share that name, or it clashes with one of durawait's own
// tools; then it is exposed as "<server>.<tool>". Input schemas are compiled
// here, once per snapshot, for checking probe arguments; policy says which
// tools beyond the read-only ones may be probed.
func newCatalog(d Downstream, native []string, policy ProbePolicy) *catalog {
	c := &catalog{
		native:  map[string]bool{},
		servers: d.ServerNames(),
		byTool:  map[string][]toolRef{},
		byCanon: map[string]toolRef{},
		down:    map[string]error{},
		exposed: map[string]toolRef{},
		policy:  policy,
		schemas: map[string]*jsonschema.Schema{},
	}
	for _, n := range native {
		c.native[n] = true
	}
	exposers := map[string]int{}
	var toExpose []toolRef
	for _, server := range c.servers {
		tools, expose, lastErr := d.ServerTools(server)
		if len(tools) == 0 && lastErr != nil {
			c.down[server] = lastErr
		}
		for _, def := range tools {
			ref := toolRef{Server: server, Def: def}
			c.byTool[def.Name] = append(c.byTool[def.Name], ref)
			c.byCanon[ref.canonical()] = ref
			c.schemas[ref.canonical()] = compileInputSchema(ref)
			if expose {
				exposers[def.Name]++
				toExpose = append(toExpose, ref)
			}
		}
	}
	for _, ref := range toExpose {
		name := ref.Def.Name
		if exposers[name] > 1 || c.native[name] {
			name = ref.canonical()
		}
		c.exposed[name] = ref
	}
	return c
}

// ResolveProbeTool implements workflows.ToolResolver. A tool that is not
// annotated readOnlyHint: true is refused unless the policy allows it.
func (c *catalog) ResolveProbeTool(name string) (string, error) {
	if c.native[name] {
		return "", fmt.Errorf("%q is one of durawait's own tools; native tools cannot be probed, name a downstream MCP tool", name)
	}
	ref, ok := c.byCanon[name]
	if !ok {
		refs := c.byTool[name]
		switch len(refs) {
		case 1:
			ref = refs[0]
		case 0:
			return "", fmt.Errorf("no downstream MCP server exposes a tool named %q%s", name, c.describeServers())
		default:
			forms := make([]string, len(refs))
			for i, r := range refs {
				forms[i] = r.canonical()
			}
			return "", fmt.Errorf("%q is a tool of several downstream servers; name one of %s", name, strings.Join(forms, ", "))
		}
	}
	if !c.policy.allows(ref) {
		return "", c.policy.refusal(ref)
	}
	return ref.canonical(), nil
}

// describeServers tells a caller what it could have probed instead.
func (c *catalog) describeServers() string {
	var parts []string
	for _, s := range c.servers {
		if err, isDown := c.down[s]; isDown {
			parts = append(parts, fmt.Sprintf("%s (not connected: %v)", s, err))
			continue
		}
		var names []string
		for canon := range c.byCanon {
			if strings.HasPrefix(canon, s+".") {
				names = append(names, strings.TrimPrefix(canon, s+"."))
			}
		}
		sort.Strings(names)
		parts = append(parts, fmt.Sprintf("%s (tools: %s)", s, strings.Join(names, ", ")))
	}
	return "; configured servers: " + strings.Join(parts, "; ")
}
