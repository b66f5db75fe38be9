package mcpfront

import (
	"fmt"
	"slices"
)

// ProbeAllTools in a server's probe tools allows every tool of the server as
// a probe, read-only or not.
const ProbeAllTools = "*"

// probePolicy says which downstream tools wait_for may probe beyond those
// annotated readOnlyHint: true: by server name, the tool names allowed, or
// ProbeAllTools. It comes from each server's probe_tools config key.
type probePolicy map[string][]string

// allows reports whether ref may be probed: wait_for is annotated read-only,
// so by default only tools annotated readOnlyHint: true can be.
func (p probePolicy) allows(ref toolRef) bool {
	if ro := ref.Def.Annotations.ReadOnlyHint; ro != nil && *ro {
		return true
	}
	allowed := p[ref.Server]
	return slices.Contains(allowed, ProbeAllTools) || slices.Contains(allowed, ref.Def.Name)
}

// refusal explains why ref cannot be probed and how to allow it.
func (p probePolicy) refusal(ref toolRef) error {
	what := "is not annotated readOnlyHint: true"
	if d := ref.Def.Annotations.DestructiveHint; d != nil && *d {
		what = "is annotated destructiveHint: true and not readOnlyHint: true"
	}
	return fmt.Errorf("%s %s; wait_for is read-only, so it probes only read-only tools unless the server allows more: "+
		"add probe_tools = [%q] (or probe_tools = [%q] for all of its tools) to the [[mcp_servers]] entry with name = %q in durawait's config",
		ref.canonical(), what, ref.Def.Name, ProbeAllTools, ref.Server)
}
