// Package probepolicy decides which downstream tools wait_for may probe. A
// probe runs many times, and wait_for is annotated read-only, so by default
// only read-only tools may be probed; a server's probe_tools allows more.
// The front end checks it before a wait starts, and the worker checks it
// again before its probe loop calls anything (an input that reached the
// worker some other way than through the front end is refused there).
package probepolicy

import (
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// AllTools in a server's probe tools allows every tool of the server as a
// probe, read-only or not.
const AllTools = "*"

// Policy is, by server name, the tools wait_for may probe beyond the
// read-only ones: their names, or AllTools. It comes from each server's
// probe_tools config key.
type Policy map[string][]string

// Allows reports whether def, a tool of server, may be probed.
func (p Policy) Allows(server string, def mcp.Tool) bool {
	if ReadOnly(def) {
		return true
	}
	allowed := p[server]
	return slices.Contains(allowed, AllTools) || slices.Contains(allowed, def.Name)
}

// ReadOnly reports whether def is a read-only tool: annotated readOnlyHint:
// true and not destructiveHint: true. A tool annotated both contradicts
// itself, and durawait believes the warning: a probe runs many times, so
// the cost of a wrong "read-only" is a destructive call at every sample.
func ReadOnly(def mcp.Tool) bool {
	a := def.Annotations
	return isTrue(a.ReadOnlyHint) && !isTrue(a.DestructiveHint)
}

// isTrue reports whether an optional annotation is set and true.
func isTrue(b *bool) bool { return b != nil && *b }

// Refusal explains why def, a tool of server, cannot be probed and how to
// allow it.
func Refusal(server string, def mcp.Tool) error {
	a := def.Annotations
	what := "is not annotated readOnlyHint: true"
	switch {
	case isTrue(a.ReadOnlyHint) && isTrue(a.DestructiveHint):
		what = "is annotated both readOnlyHint: true and destructiveHint: true, which contradict each other, so durawait takes it as destructive"
	case isTrue(a.DestructiveHint):
		what = "is annotated destructiveHint: true and not readOnlyHint: true"
	}
	return fmt.Errorf("%s.%s %s; wait_for is read-only, so it probes only read-only tools unless the server allows more: "+
		"add probe_tools = [%q] (or probe_tools = [%q] for all of its tools) to the [[mcp_servers]] entry with name = %q in durawait's config",
		server, def.Name, what, def.Name, AllTools, server)
}
