package mcpfront

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/durawait/durawait/internal/probepolicy"
	"github.com/durawait/durawait/workflows"
)

// catalog is a snapshot of the downstream tools with the names durawait
// exposes them under.
type catalog struct {
	// source is the workers' catalog this one was built from.
	source workflows.DownstreamCatalog
	// undecodable lists the tools this front end could not read, by server.
	undecodable []string
	native      map[string]bool
	servers     []string
	byTool      map[string][]toolRef // tool name -> the servers that have it
	byCanon     map[string]toolRef   // "<server>.<tool>" -> tool
	down        map[string]error     // servers with no tools and a connection error
	exposed     map[string]toolRef   // exposed name -> tool
	policy      probePolicy
	schemas     map[string]*jsonschema.Schema // "<server>.<tool>" -> compiled input schema
}

// newCatalog builds the catalog of the tools the workers published. A tool
// is exposed under its own name unless two exposing servers share that
// name, or it clashes with one of durawait's own tools; then it is exposed
// as "<server>.<tool>". Input schemas are compiled here, once per catalog,
// for checking probe arguments; each server's probe_tools say which tools
// beyond the read-only ones may be probed.
func newCatalog(src workflows.DownstreamCatalog, native []string) *catalog {
	c := &catalog{
		source:  src,
		native:  map[string]bool{},
		byTool:  map[string][]toolRef{},
		byCanon: map[string]toolRef{},
		down:    map[string]error{},
		exposed: map[string]toolRef{},
		policy:  probePolicy{},
		schemas: map[string]*jsonschema.Schema{},
	}
	for _, n := range native {
		c.native[n] = true
	}
	exposers := map[string]int{}
	var toExpose []toolRef
	for _, server := range src.Servers {
		c.servers = append(c.servers, server.Name)
		if len(server.ProbeTools) > 0 {
			c.policy[server.Name] = server.ProbeTools
		}
		if len(server.Tools) == 0 && server.Error != "" {
			c.down[server.Name] = errors.New(server.Error)
		}
		for _, raw := range server.Tools {
			def, err := decodeTool(raw)
			if err != nil {
				c.undecodable = append(c.undecodable, fmt.Sprintf("%s: %v", server.Name, err))
				continue
			}
			ref := toolRef{Server: server.Name, Def: def}
			c.byTool[def.Name] = append(c.byTool[def.Name], ref)
			c.byCanon[ref.canonical()] = ref
			c.schemas[ref.canonical()] = compileInputSchema(ref)
			if server.Expose {
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

// decodeTool decodes a tool as a worker published it, keeping its schemas
// exactly as its server sent them.
func decodeTool(raw json.RawMessage) (mcp.Tool, error) {
	var def mcp.Tool
	if err := json.Unmarshal(raw, &def); err != nil {
		return mcp.Tool{}, fmt.Errorf("decode a downstream tool: %w", err)
	}
	var schemas struct {
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(raw, &schemas); err != nil {
		return mcp.Tool{}, fmt.Errorf("decode a downstream tool's schemas: %w", err)
	}
	if isJSONValue(schemas.InputSchema) && !bytes.Equal(schemas.InputSchema, noInputSchema) {
		def.InputSchema, def.RawInputSchema = mcp.ToolInputSchema{}, schemas.InputSchema
	}
	if isJSONValue(schemas.OutputSchema) {
		def.OutputSchema, def.RawOutputSchema = mcp.ToolOutputSchema{}, schemas.OutputSchema
	}
	return def, nil
}

// noInputSchema is how a tool its server listed without an input schema is
// encoded; such a tool is re-exposed with the smallest valid schema (see
// proxyTool).
var noInputSchema, _ = json.Marshal(mcp.ToolInputSchema{})

// isJSONValue reports whether raw holds a value other than null.
func isJSONValue(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// downstreamStatus reports each server as "connected" or
// "unavailable: <last connection error>".
func (c *catalog) downstreamStatus() map[string]string {
	status := map[string]string{}
	for _, s := range c.source.Servers {
		if s.Error != "" {
			status[s.Name] = "unavailable: " + s.Error
		} else {
			status[s.Name] = "connected"
		}
	}
	return status
}

// ResolveProbeTool implements workflows.ToolResolver. A tool that is not
// read-only (annotated readOnlyHint: true and not destructiveHint: true) is
// refused unless the policy allows it.
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
	if !c.policy.Allows(ref.Server, ref.Def) {
		return "", probepolicy.Refusal(ref.Server, ref.Def)
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

// CheckProbeArgs implements workflows.ProbeArgsChecker: it checks args
// against the input schema the probe tool's server declared, and names each
// offending property and the rule it breaks.
func (c *catalog) CheckProbeArgs(canonical string, args json.RawMessage) []*workflows.FieldError {
	sch := c.schemas[canonical]
	if sch == nil {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return []*workflows.FieldError{{Field: "probe.args", Rule: fmt.Sprintf("is not valid JSON: %v", err)}}
	}
	err = sch.Validate(v)
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return nil
	}
	var out []*workflows.FieldError
	for _, leaf := range schemaLeaves(verr) {
		field := "probe.args"
		for _, tok := range leaf.InstanceLocation {
			field += "." + tok
		}
		msg := leaf.Error()
		if i := strings.Index(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		rule := "schema"
		if kw := leaf.ErrorKind.KeywordPath(); len(kw) > 0 {
			rule = kw[len(kw)-1]
		}
		out = append(out, &workflows.FieldError{Field: field,
			Rule: fmt.Sprintf("%s (rule %q of %s's inputSchema)", msg, rule, canonical)})
	}
	return out
}
