// Package childenv builds the environment of a process durawait starts for
// someone else's code (a stdio downstream MCP server, an agent CLI): a
// minimal base of durawait's own, the names the operator chose to pass on,
// and the variables the operator configured. durawait's environment often
// holds secrets (cloud credentials, API keys, tokens) that such a process
// has no business reading.
package childenv

import (
	"slices"
	"sort"
	"strings"
)

// BaseNames are the variables every such process gets from durawait's
// environment, when set: enough to find programs, a home and a locale, and
// nothing that could be a secret. LC_* matches every locale category.
var BaseNames = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_*", "TMPDIR", "TZ"}

// AgentNames are the variables an agent CLI gets besides BaseNames: what a
// CLI that works in a repository and calls its vendor's API needs from the
// user's session (a proxy and its exceptions, a CA bundle, an SSH agent
// for git, the shell and terminal, the XDG folders where CLIs keep their
// configuration and credentials), and nothing that is itself a credential.
var AgentNames = []string{
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
	"SSH_AUTH_SOCK", "SHELL", "TERM", "XDG_*",
}

// Inherit says which more of durawait's environment a process gets.
type Inherit struct {
	// All passes durawait's whole environment.
	All bool
	// Names are passed too; a name ending in '*' matches a prefix.
	Names []string
}

// Build assembles a process's environment from durawait's (parent, as
// os.Environ returns it): the base variables, those inherit names, then
// the configured env, which wins. The result is sorted and has one entry
// per name.
func Build(parent []string, inherit Inherit, env map[string]string) []string {
	vars := map[string]string{}
	for _, kv := range parent {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if inherit.All || matchAny(name, BaseNames) || matchAny(name, inherit.Names) {
			vars[name] = value
		}
	}
	for k, v := range env {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// matchAny reports whether name is one of patterns, a pattern ending in
// '*' matching a prefix.
func matchAny(name string, patterns []string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			return strings.HasPrefix(name, prefix)
		}
		return name == p
	})
}
