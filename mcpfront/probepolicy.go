package mcpfront

import (
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// ProbeAllTools in a server's probe tools allows every tool of the server as
// a probe, read-only or not.
const ProbeAllTools = "*"

// probePolicy says which downstream tools wait_for may probe beyond the
// read-only ones (readOnlyTool): by server name, the tool names allowed, or
// ProbeAllTools. It comes from each server's probe_tools config key.
type probePolicy map[string][]string

// allows reports whether ref may be probed: wait_for is annotated read-only,
// so by default only read-only tools can be (readOnlyTool).
func (p probePolicy) allows(ref toolRef) bool {
	if readOnlyTool(ref.Def) {
		return true
	}
	allowed := p[ref.Server]
	return slices.Contains(allowed, ProbeAllTools) || slices.Contains(allowed, ref.Def.Name)
}

// readOnlyTool reports whether def is a read-only tool: annotated readOnlyHint:
// true and not destructiveHint: true. A tool annotated both contradicts
// itself, and durawait believes the warning: a probe runs many times, so
// the cost of a wrong "read-only" is a destructive call at every sample.
func readOnlyTool(def mcp.Tool) bool {
	a := def.Annotations
	return isTrue(a.ReadOnlyHint) && !isTrue(a.DestructiveHint)
}

// isTrue reports whether an optional annotation is set and true.
func isTrue(b *bool) bool { return b != nil && *b }

// refusal explains why ref cannot be probed and how to allow it.
func (p probePolicy) refusal(ref toolRef) error {
	a := ref.Def.Annotations
	what := "is not annotated readOnlyHint: true"
	switch {
	case isTrue(a.ReadOnlyHint) && isTrue(a.DestructiveHint):
		what = "is annotated both readOnlyHint: true and destructiveHint: true, which contradict each other, so durawait takes it as destructive"
	case isTrue(a.DestructiveHint):
		what = "is annotated destructiveHint: true and not readOnlyHint: true"
	}
	return fmt.Errorf("%s %s; wait_for is read-only, so it probes only read-only tools unless the server allows more: "+
		"add probe_tools = [%q] (or probe_tools = [%q] for all of its tools) to the [[mcp_servers]] entry with name = %q in durawait's config",
		ref.canonical(), what, ref.Def.Name, ProbeAllTools, ref.Server)
}
